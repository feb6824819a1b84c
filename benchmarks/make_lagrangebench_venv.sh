#!/usr/bin/env bash
# A virtual environment for LagrangeBench's own GNS: lagrangebench 0.0.1 from PyPI
# (tumaer/lagrangebench; the only release the registry has), with the versions below. Outside
# the repository, so gnkit's own environment keeps its newer JAX:
#
#     bash benchmarks/make_lagrangebench_venv.sh [DIR]    # default ~/.cache/gnkit-lagrangebench-venv
#
# lagrangebench 0.0.1's own pins do not import on Python 3.11 (jax-md 0.2.3 / 0.2.5 put a jax
# array as a dataclass default, which 3.11 refuses; jax-md 0.2.3 also needs jax.abstract_arrays,
# gone after jax 0.4.13), and its code uses jax.random.KeyArray (gone in later jax). What works,
# found by trial here: jax / jaxlib 0.4.13, jax-md 0.2.7, e3nn-jax 0.19.3 (jax-md 0.2.7 needs
# e3nn_jax.legacy), scipy < 1.13 (jax 0.4.13 calls scipy.linalg.tril), vtk < 9.3 (pyvista 0.38),
# setuptools < 70 (wandb 0.15 imports pkg_resources). torch is a CPU build (LagrangeBench uses it
# only for DataLoader; its pin torch == 1.13.1 pulls some 2 GB of CUDA 11 wheels), so
# lagrangebench itself is installed without dependencies.
#
# One shim is needed before `import lagrangebench`: its SEGNN module imports
# e3nn_jax._src.tensor_products.naive_broadcast_decorator, which e3nn-jax 0.19.2+ dropped (GNS
# does not use it); the check below shows it.
set -euo pipefail
VENV="${1:-$HOME/.cache/gnkit-lagrangebench-venv}"
PYTHON="${PYTHON:-python3}"
TORCH="${TORCH:-torch==2.13.0+cpu}"
"$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --upgrade pip
"$VENV/bin/python" -m pip install --quiet --no-deps "lagrangebench==0.0.1"
"$VENV/bin/python" -m pip install --quiet \
    "jax[cpu]==0.4.13" "jaxlib==0.4.13" "numpy>=1.24.3,<2" "scipy<1.13" "$TORCH" \
    "flax<0.7.3" "chex<0.1.83" "PyYAML>=6,<7" "cloudpickle>=2.2.1,<3" "dm-haiku==0.0.10" \
    "e3nn-jax==0.19.3" "h5py>=3.8,<4" "jax-md==0.2.7" "jmp>=0.0.4,<0.0.5" "jraph==0.0.6.dev0" \
    "matscipy>=0.8,<0.9" "optax==0.1.5" "ott-jax>=0.4,<0.5" "pyvista>=0.38.6,<0.39" "vtk<9.3" \
    "wandb>=0.15.1,<0.16"
# After the rest: torch 2.13 declares setuptools >= 77, which has no pkg_resources (pip warns).
"$VENV/bin/python" -m pip install --quiet "setuptools<70"
"$VENV/bin/python" -c "
import e3nn_jax._src.tensor_products as tp
tp.naive_broadcast_decorator = getattr(tp, 'naive_broadcast_decorator', lambda f: f)
import importlib.metadata as m, jax, lagrangebench
print('lagrangebench', m.version('lagrangebench'), 'jax', jax.__version__, 'jax-md',
      m.version('jax-md'), 'haiku', m.version('dm-haiku'), 'devices', jax.devices())"
