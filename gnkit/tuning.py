"""Process-level settings that make JAX's CPU steps faster: an explicit opt-in, never applied on
`import gnkit`.

XLA's CPU runtime allocates each call's outputs and temporaries with `malloc` on its worker
threads. Under glibc's defaults every buffer above 32 MB is a fresh `mmap` and is unmapped when
freed, so each step touches new pages and pays a page fault per 4 KB (a 109 MB temporary: about
26,700 faults a step). `MALLOC_MMAP_MAX_=0` in the environment does not stop it: a worker
thread's own arena maps anything above 64 MB regardless. `use_fast_allocator` routes every
thread through the main heap and keeps freed memory there, so steady-state steps reuse pages.
Host only; Linux with glibc.

The demos' entry point (`gnkit DEMO ...`) and the training loop (`gnkit.train.fit`) call
`use_fast_allocator_for_training()`, so demo and `fit` users get the fast setting without asking;
`GNKIT_SYSTEM_MALLOC=1` in the environment leaves glibc's settings alone there.

A setting that must be made before Python starts does much the same without the larger heap:
`GLIBC_TUNABLES=glibc.malloc.hugetlb=1` (glibc 2.35 or later, transparent huge pages in
`madvise` or `always` mode) maps those blocks with 2 MB pages, one fault per 512 small ones.
"""

from __future__ import annotations

import ctypes
import os
import platform
import sys
import warnings

# glibc's mallopt parameters (malloc.h).
_M_TRIM_THRESHOLD = -1
_M_MMAP_MAX = -4
_M_ARENA_MAX = -8
# Free memory kept at the top of the heap before it is returned to the system: 2 GiB (the
# largest value mallopt's int takes).
_TRIM_THRESHOLD = 2**31 - 1
# Set to 1 to keep the demos and `fit` from changing glibc's settings.
SYSTEM_MALLOC_ENV = "GNKIT_SYSTEM_MALLOC"


def _jax_backend_started() -> bool:
    """Whether JAX has started a backend (and with it the threads that allocate its buffers)."""
    if "jax" not in sys.modules:
        return False
    from jax._src import xla_bridge

    started = getattr(xla_bridge, "backends_are_initialized", None)
    return True if started is None else bool(started())


def _mallopt():
    """glibc's `mallopt`, or None where the C library is not glibc."""
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return None
    return getattr(ctypes.CDLL(None), "mallopt", None)


def use_fast_allocator(*, warn_if_late: bool = True) -> bool:
    """Make glibc's `malloc` reuse freed memory for the whole process; returns whether it did.

    Sets one malloc arena for all threads (`M_ARENA_MAX=1`), no `mmap` for large blocks
    (`M_MMAP_MAX=0`) and a 2 GiB trim threshold, the run-time equivalent of starting Python with
    `MALLOC_ARENA_MAX=1 MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=2147483647`. Call it at the top
    of a program, before the first JAX computation: threads that have already allocated keep
    their own arenas, which still map buffers above 64 MB afresh each call (a warning says so;
    smaller buffers are still helped). The cost: memory freed by the process stays reserved for
    it (the resident size stays at its peak) instead of going back to the system. Does nothing
    and returns False off glibc (macOS, Windows, musl). `warn_if_late=False` drops the warning
    for callers that know JAX may have started. Host only; not jittable.
    """
    mallopt = _mallopt()
    if mallopt is None:
        return False
    if warn_if_late and _jax_backend_started():
        warnings.warn(
            "gnkit.tuning.use_fast_allocator() called after JAX started: buffers above 64 MB "
            "allocated on JAX's worker threads are still mapped afresh each call. Call it "
            "before the first JAX computation.",
            stacklevel=2,
        )
    settings = ((_M_ARENA_MAX, 1), (_M_MMAP_MAX, 0), (_M_TRIM_THRESHOLD, _TRIM_THRESHOLD))
    return all(mallopt(option, value) == 1 for option, value in settings)


def use_fast_allocator_for_training() -> bool:
    """`use_fast_allocator()` unless `GNKIT_SYSTEM_MALLOC=1`; returns whether it was applied.

    What `gnkit DEMO ...` calls before its verb runs (before JAX starts, so every buffer
    benefits) and `gnkit.train.fit` calls before its first step (JAX has started by then: buffers
    up to 64 MB allocated on JAX's worker threads stop faulting, larger ones still do). No
    warning when JAX has started. Host only; not jittable.
    """
    if os.environ.get(SYSTEM_MALLOC_ENV, "") == "1":
        return False
    return use_fast_allocator(warn_if_late=False)
