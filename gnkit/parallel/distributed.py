"""Many hosts: start `jax.distributed`, and give each process its own part of the data. Host."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import jax


def _env_int(name: str) -> int | None:
    value = os.environ.get(name)
    return None if value is None else int(value)


def initialize(
    coordinator_address: str | None = None,
    num_processes: int | None = None,
    process_id: int | None = None,
    *,
    local_device_ids: int | Sequence[int] | None = None,
    cpu_collectives: str | None = "gloo",
    **kwargs: Any,
) -> tuple[int, int]:
    """Start `jax.distributed` and return `(process_index, process_count)`. Host.

    An argument None in the call and in the environment is detected by JAX on Slurm, Open MPI,
    Cloud TPU and Kubernetes. Call it before any other JAX call; once started, a second
    call only returns the pair.

    Args:
      coordinator_address: `host:port` of process 0; None reads `JAX_COORDINATOR_ADDRESS`.
      num_processes: processes in the job; None reads `JAX_NUM_PROCESSES`.
      process_id: this process's index; None reads `JAX_PROCESS_ID`.
      local_device_ids: the devices this process uses; None: all visible ones.
      cpu_collectives: `'gloo'` or `'mpi'`, so CPU devices can reduce across processes (no effect
        on GPUs or TPUs); None leaves JAX's default.
      **kwargs: passed on to `jax.distributed.initialize`.

    Returns:
      `(process_index, process_count)`.
    """
    if jax.distributed.is_initialized():
        return jax.process_index(), jax.process_count()
    if cpu_collectives is not None:
        jax.config.update("jax_cpu_collectives_implementation", cpu_collectives)
    jax.distributed.initialize(
        coordinator_address or os.environ.get("JAX_COORDINATOR_ADDRESS"),
        num_processes if num_processes is not None else _env_int("JAX_NUM_PROCESSES"),
        process_id if process_id is not None else _env_int("JAX_PROCESS_ID"),
        local_device_ids=local_device_ids,
        **kwargs,
    )
    return jax.process_index(), jax.process_count()


def process_shard(
    data: Sequence[Any], process_index: int | None = None, process_count: int | None = None
) -> Sequence[Any]:
    """This process's contiguous part of `data` (a list, an array, a list of files...). Host.

    `data[i * n // count : (i + 1) * n // count]` for process `i` of `count` (default: this
    process of `jax.distributed`): the parts are disjoint, cover `data` and differ in length by
    at most one. Only this part is sliced out, so a lazily loading sequence reads nothing else.
    """
    index = jax.process_index() if process_index is None else process_index
    count = jax.process_count() if process_count is None else process_count
    return data[index * len(data) // count : (index + 1) * len(data) // count]
