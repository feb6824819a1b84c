#!/usr/bin/env bash
# A virtual environment with InstaDeep's mlip 0.2.5 (JAX MACE, NequIP, ViSNet) on CPU jax, the
# peer of benchmarks/mlip_train.py. Outside the repository, so gnkit's own environment keeps
# its packages; jax and jaxlib are gnkit's 0.10.2, so the XLA flag `import gnkit` sets is known
# to mlip's XLA too:
#
#     bash benchmarks/make_mlip_venv.sh [DIR]    # default ~/.cache/gnkit-mlip
#     python -m benchmarks.mlip_train --mlip-python DIR/bin/python
set -euo pipefail
VENV="${1:-$HOME/.cache/gnkit-mlip}"
PYTHON="${PYTHON:-python3}"
"$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --upgrade pip
"$VENV/bin/python" -m pip install --quiet "mlip==0.2.5" "jax==0.10.2" "jaxlib==0.10.2" \
    "flax==0.12.8" "e3nn-jax==0.21.0" "e3j==0.1.1" "optax==0.2.8" "ase==3.29.0"
"$VENV/bin/python" -c "import importlib.metadata as m, jax; print('mlip', m.version('mlip'), \
'jax', jax.__version__, 'flax', m.version('flax'), 'e3j', m.version('e3j'), jax.devices())"
