"""Process-level settings that make JAX's CPU steps faster, applied on `import gnkit`.

Two settings: glibc's allocator, and one XLA CPU compiler flag.

The allocator.

XLA's CPU runtime allocates each call's outputs and temporaries with `malloc` on its worker
threads. Under glibc's defaults every buffer above 32 MB is a fresh `mmap` and is unmapped when
freed, so each step touches new pages and pays a page fault per 4 KB (a 109 MB temporary: about
26,700 faults a step). `MALLOC_MMAP_MAX_=0` in the environment does not stop it: a worker
thread's own arena maps anything above 64 MB regardless. `use_fast_allocator` routes every
thread through the main heap and keeps freed memory there, so steady-state steps reuse pages.

`import gnkit` calls `apply_default_allocator()`, which applies `use_fast_allocator()` unless
`GNKIT_SYSTEM_MALLOC=1` is in the environment (then glibc's settings are left as they are). It
holds for `import gnkit; import jax` and for `import jax; import gnkit` alike (importing JAX
starts no threads). A JAX computation run before `import gnkit` has started JAX's worker threads,
which keep the arenas they own: their buffers up to 64 MB stop faulting, larger ones are still
mapped afresh each call, so import gnkit before the first computation. The cost: memory freed by
the process stays reserved for it (the resident size stays near its peak, and the heap grows to
hold a few steps' buffers before it reuses them) instead of going back to the system. Nothing
happens off glibc (macOS, Windows, musl). Host only.

A setting that must be made before Python starts does much the same without the larger heap:
`GLIBC_TUNABLES=glibc.malloc.hugetlb=1` (glibc 2.35 or later, transparent huge pages in
`madvise` or `always` mode) maps those blocks with 2 MB pages, one fault per 512 small ones.

The XLA flag. XLA's CPU compiler of jaxlib 0.10 and 0.11 hands reductions to YNNPACK, which for
the reductions of message passing's backward pass (a gradient summed over a small axis of an
`[n_edge, ...]` array) is several times slower than XLA's own loops, and keeps slices out of the
fused kernel (upstream: jax-ml/jax#37465, openxla/xla#46351). `import gnkit` appends
`--xla_cpu_experimental_ynn_fusion_type=-reduce` to `XLA_FLAGS` (`apply_default_xla_flags`),
which keeps YNNPACK's matrix products and leaves reductions to XLA. Like every XLA flag it
takes effect only if it is set before JAX starts its backend, so import gnkit before the first
JAX computation. It is left out when `XLA_FLAGS` already names the flag (yours wins), when
`GNKIT_SYSTEM_XLA_FLAGS=1` is in the environment, for other jaxlib versions (an XLA that does
not know a flag aborts), and under `--xla_backend_optimization_level=0`: at that level XLA's
own reduction loops turned a Relation Network's training loss into NaN after four updates
(jaxlib 0.10.2), which level 3 and YNNPACK's reductions both compute correctly.

Child processes inherit `XLA_FLAGS`; one that runs an older jaxlib (a separate virtual
environment) aborts on a flag its XLA does not know. Start it with `foreign_jax_environment()`.
"""

from __future__ import annotations

import ctypes
import importlib.metadata
import os
import sys
import warnings

# glibc's mallopt parameters (malloc.h).
_M_TRIM_THRESHOLD = -1
_M_MMAP_MAX = -4
_M_ARENA_MAX = -8
# Free memory kept at the top of the heap before it is returned to the system: 2 GiB (the
# largest value mallopt's int takes).
_TRIM_THRESHOLD = 2**31 - 1
# Set to 1 to keep `import gnkit` from changing glibc's settings.
SYSTEM_MALLOC_ENV = "GNKIT_SYSTEM_MALLOC"
# Set to 1 to keep `import gnkit` from adding to XLA_FLAGS.
SYSTEM_XLA_FLAGS_ENV = "GNKIT_SYSTEM_XLA_FLAGS"
# The flag `import gnkit` adds, and the jaxlib versions it is added for: [first, end).
CPU_REDUCTIONS_FLAG = "--xla_cpu_experimental_ynn_fusion_type=-reduce"
_CPU_REDUCTIONS_JAXLIB = ((0, 10), (0, 12))
# XLA's optimisation level under which the flag is not added (see the module docstring).
_UNOPTIMISED = "--xla_backend_optimization_level=0"


def _jax_backend_started() -> bool:
    """Whether JAX has started a backend (and with it the threads that allocate its buffers)."""
    if "jax" not in sys.modules:
        return False
    from jax._src import xla_bridge

    started = getattr(xla_bridge, "backends_are_initialized", None)
    return True if started is None else bool(started())


def _mallopt():
    """glibc's `mallopt`, or None where the C library is not glibc."""
    try:
        glibc = os.confstr("CS_GNU_LIBC_VERSION")  # "glibc 2.39"; unset or unknown elsewhere
    except (AttributeError, ValueError, OSError):
        return None
    if not glibc or not glibc.startswith("glibc"):
        return None
    return getattr(ctypes.CDLL(None), "mallopt", None)


def use_fast_allocator(*, warn_if_late: bool = True) -> bool:
    """Make glibc's `malloc` reuse freed memory for the whole process; returns whether it did.

    Sets one malloc arena for all threads (`M_ARENA_MAX=1`), no `mmap` for large blocks
    (`M_MMAP_MAX=0`) and a 2 GiB trim threshold, the run-time equivalent of starting Python with
    `MALLOC_ARENA_MAX=1 MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=2147483647`. `import gnkit`
    already calls it (see `apply_default_allocator`); calling it again changes nothing. Threads
    that allocated before it keep their own arenas, which still map buffers above 64 MB afresh
    each call: called after the first JAX computation it warns, unless `warn_if_late=False`
    (smaller buffers are still helped). Does nothing and returns False off glibc (macOS,
    Windows, musl). Host only; not jittable.
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


def apply_default_allocator() -> bool:
    """`use_fast_allocator()` unless `GNKIT_SYSTEM_MALLOC=1`; returns whether it was applied.

    What `import gnkit` runs, once per process. No warning when a JAX computation ran before it
    (the module docstring says what still helps then). Host only; not jittable.
    """
    if os.environ.get(SYSTEM_MALLOC_ENV, "") == "1":
        return False
    return use_fast_allocator(warn_if_late=False)


def _jaxlib_version() -> tuple[int, int] | None:
    """jaxlib's (major, minor) from its installed metadata, without importing it."""
    try:
        major, minor = importlib.metadata.version("jaxlib").split(".")[:2]
        return int(major), int(minor)
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return None


def apply_default_xla_flags() -> bool:
    """Append `CPU_REDUCTIONS_FLAG` to `XLA_FLAGS`; returns whether it did.

    What `import gnkit` runs, once per process (the module docstring says why). Leaves
    `XLA_FLAGS` as it is when it already names the flag, when `GNKIT_SYSTEM_XLA_FLAGS=1`, when
    JAX has started its backend (the flags are read then, so a later change would not apply),
    when jaxlib is not 0.10 or 0.11, or under `--xla_backend_optimization_level=0`. Host only;
    not jittable.
    """
    flags = os.environ.get("XLA_FLAGS", "")
    first, end = _CPU_REDUCTIONS_JAXLIB
    if (os.environ.get(SYSTEM_XLA_FLAGS_ENV, "") == "1"
            or CPU_REDUCTIONS_FLAG.split("=")[0] in flags
            or _UNOPTIMISED in flags.split()
            or not first <= (_jaxlib_version() or (0, 0)) < end
            or _jax_backend_started()):
        return False
    os.environ["XLA_FLAGS"] = f"{flags} {CPU_REDUCTIONS_FLAG}".strip()
    return True


def foreign_jax_environment(environment: dict[str, str] | None = None) -> dict[str, str]:
    """A copy of `environment` (default `os.environ`) without the flag `import gnkit` adds.

    For a child process that runs another jaxlib, whose XLA may not know the flag and would
    abort. Host only.
    """
    environment = dict(os.environ if environment is None else environment)
    flags = environment.get("XLA_FLAGS", "").split()
    if CPU_REDUCTIONS_FLAG in flags:
        flags.remove(CPU_REDUCTIONS_FLAG)
        if flags:
            environment["XLA_FLAGS"] = " ".join(flags)
        else:
            del environment["XLA_FLAGS"]
    return environment
