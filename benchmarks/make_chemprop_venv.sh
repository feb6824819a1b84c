#!/usr/bin/env bash
# A virtual environment for benchmarks/chemprop_compare.py: gnkit's own environment seen through
# --system-site-packages, plus chemprop 2.3.1 and what it needs. chemprop's cuik_molmaker_pin
# pins RDKit (2026.03.6 for chemprop 2.3.1), so that RDKit is installed here and shadows the main
# environment's for both tools of a run. Outside the repository, so gnkit's environment keeps
# its packages:
#
#     bash benchmarks/make_chemprop_venv.sh [DIR]    # default ~/.cache/gnkit-chemprop
#     DIR/bin/python -m benchmarks.chemprop_compare ...
set -euo pipefail
VENV="${1:-$HOME/.cache/gnkit-chemprop}"
PYTHON="${PYTHON:-python3}"
"$PYTHON" -m venv --system-site-packages "$VENV"
"$VENV/bin/python" -m pip install --quiet "chemprop==2.3.1"
"$VENV/bin/python" -c "import chemprop, rdkit, torch, gnkit; print('chemprop', \
chemprop.__version__, 'rdkit', rdkit.__version__, 'torch', torch.__version__)"
