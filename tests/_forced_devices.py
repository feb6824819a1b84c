"""Run Python code in a fresh interpreter with forced CPU devices (XLA_FLAGS must be set before
JAX starts, so multi-device checks cannot run in the test process)."""

import os
import subprocess
import sys


def run_with_devices(code: str, *args: str, devices: int = 8, timeout: int = 600) -> str:
    """Run `python -c code *args` on `devices` forced CPU devices; assert it succeeds and
    return its standard output."""
    flags = os.environ.get("XLA_FLAGS", "")
    env = dict(os.environ, XLA_FLAGS=f"{flags} --xla_force_host_platform_device_count={devices}")
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout
