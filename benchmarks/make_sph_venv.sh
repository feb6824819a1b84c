#!/usr/bin/env bash
# A virtual environment for the particle-fluid data generator (gnkit/particles/sph_data.py):
# JAX-SPH 0.1.0 (tumaer/jax-sph), which pins jax[cpu] == jaxlib == 0.4.29, with h5py. JAX-SPH
# declares Requires-Python <= 3.11, which pip reads as "not 3.11.7", hence
# --ignore-requires-python; its other requirements are installed as it pins them. Outside the
# repository, so gnkit's own environment keeps its newer JAX:
#
#     bash benchmarks/make_sph_venv.sh [DIR]    # default ~/.cache/gnkit-sph-venv
#     DIR/bin/python gnkit/particles/sph_data.py --case tgv2d --out /tmp/tgv2d --trajectories 2
set -euo pipefail
VENV="${1:-$HOME/.cache/gnkit-sph-venv}"
PYTHON="${PYTHON:-python3}"
"$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --upgrade pip
# Wheels only, and NumPy 1.x (jaxlib 0.4.29 was built against it; without the cap pip picks a
# NumPy 2 release and may build it from source).
"$VENV/bin/python" -m pip install --quiet --only-binary=:all: --ignore-requires-python \
    "jax_sph==0.1.0" "h5py>=3.9" "numpy<2"
"$VENV/bin/python" -c "import importlib.metadata as m, jax, h5py; from jax_sph import simulate; \
print('jax', jax.__version__, 'jax_sph', m.version('jax_sph'), 'h5py', h5py.__version__)"
