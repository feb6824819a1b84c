#!/usr/bin/env bash
# A virtual environment with the interatomic-potential peers of benchmarks/atoms_potentials.py:
# CPU torch, mace-torch 0.3.x and nequip 0.6.2 (the last release whose models are built by a
# plain Python function, `nequip.model.model_from_config`; both pin e3nn 0.4.4). Outside the
# repository, so gnkit's own environment keeps its packages:
#
#     bash benchmarks/make_atoms_peers_venv.sh [DIR]    # default ~/.cache/gnkit-atoms-peers
#     python -m benchmarks.atoms_potentials --peers-python DIR/bin/python
set -euo pipefail
VENV="${1:-$HOME/.cache/gnkit-atoms-peers}"
PYTHON="${PYTHON:-python3}"
"$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --upgrade pip
# CPU torch from PyTorch's CPU index; where that index cannot be reached, whatever pip finds
# (a local wheel directory, or PyPI's default build).
"$VENV/bin/python" -m pip install --quiet --timeout 15 --retries 0 "torch==2.13.0" \
    --index-url https://download.pytorch.org/whl/cpu 2>/dev/null \
    || "$VENV/bin/python" -m pip install --quiet "torch==2.13.0"
"$VENV/bin/python" -m pip install --quiet "mace-torch==0.3.14" "nequip==0.6.2" "ase>=3.23"
"$VENV/bin/python" -c "import torch, mace, nequip, e3nn; print('torch', torch.__version__, \
'mace', mace.__version__, 'nequip', nequip.__version__, 'e3nn', e3nn.__version__)"
