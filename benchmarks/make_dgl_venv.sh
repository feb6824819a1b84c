#!/usr/bin/env bash
# A virtual environment with DGL for benchmarks/sampling.py: dgl 2.1.0 (the last release with
# Python 3.11 CPU wheels on PyPI) and the torch it was built against (2.2.1; DGL loads a
# torch-version-specific adapter), numpy < 2 as that torch needs. Outside the repository, so
# gnkit's own environment keeps its packages:
#
#     bash benchmarks/make_dgl_venv.sh [DIR]    # default ~/.cache/gnkit-dgl-venv
#     python -m benchmarks.sampling --dgl-python DIR/bin/python
set -euo pipefail
VENV="${1:-$HOME/.cache/gnkit-dgl-venv}"
PYTHON="${PYTHON:-python3}"
"$PYTHON" -m venv "$VENV"
# A machine-wide pip constraint file may cap torch at another version; this venv pins its own.
export PIP_CONSTRAINT=""
"$VENV/bin/python" -m pip install --quiet --upgrade pip
# CPU torch from PyTorch's CPU index; where that index cannot be reached, PyPI's default build.
"$VENV/bin/python" -m pip install --quiet --timeout 15 --retries 0 "torch==2.2.1" "numpy<2" \
    --index-url https://download.pytorch.org/whl/cpu 2>/dev/null \
    || "$VENV/bin/python" -m pip install --quiet "torch==2.2.1" "numpy<2"
# torchdata's releases each pin one torch; DGL's graphbolt only needs its datapipes.
"$VENV/bin/python" -m pip install --quiet --no-deps "torchdata==0.7.1"
"$VENV/bin/python" -m pip install --quiet "dgl==2.1.0" "numpy<2" "scipy" "networkx" "tqdm" \
    "psutil" "requests" "pydantic" "pyyaml" "pandas<3"
"$VENV/bin/python" -c "import torch, dgl, numpy; print('torch', torch.__version__, 'dgl', \
dgl.__version__, 'numpy', numpy.__version__)"
