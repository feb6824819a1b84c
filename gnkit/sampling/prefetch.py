"""Sampling ahead of the training step on background threads, and one batch per device.

The samplers' NumPy work releases the GIL for most of its time, so threads overlap it with a
jitted step (which releases the GIL while XLA runs). Batches come out in order whatever thread
made them, and each is a pure function of `(epoch, index)`, so a run is the same with or
without prefetch. `Prefetcher` records how long the consumer waited, the number that says
whether sampling keeps up with the step. Host.
"""

from __future__ import annotations

import collections
import concurrent.futures
import time
from collections.abc import Callable, Iterator
from typing import Any


class Prefetcher:
    """Iterates `make(0), make(1), ..., make(count - 1)`, made ahead on worker threads.

    Up to `buffer_size` items are in flight or ready at a time. `transfer` (e.g.
    `jax.device_put`, or a strategy's `shard_device_batches`) runs on the worker after `make`,
    so the copy to the device is off the step's thread too. After (or during) an iteration,
    `wait_seconds` is the time the consumer spent blocked on an item not yet ready,
    `elapsed_seconds` the time from the first request to the last item, and `wait_fraction`
    their ratio. Host.
    """

    def __init__(
        self,
        make: Callable[[int], Any],
        count: int,
        *,
        buffer_size: int = 4,
        num_workers: int = 1,
        transfer: Callable[[Any], Any] | None = None,
    ):
        if buffer_size < 1 or num_workers < 1:
            raise ValueError(f"buffer_size and num_workers must be positive; got {buffer_size}, "
                             f"{num_workers}.")
        self.make, self.count, self.transfer = make, int(count), transfer
        self.buffer_size, self.num_workers = int(buffer_size), int(num_workers)
        self.wait_seconds = 0.0
        self.elapsed_seconds = 0.0

    def __len__(self) -> int:
        return self.count

    @property
    def wait_fraction(self) -> float:
        """The share of the iteration's time spent waiting for a batch, in [0, 1]."""
        return self.wait_seconds / self.elapsed_seconds if self.elapsed_seconds else 0.0

    def _produce(self, index: int):
        item = self.make(index)
        return item if self.transfer is None else self.transfer(item)

    def __iter__(self) -> Iterator[Any]:
        self.wait_seconds, self.elapsed_seconds = 0.0, 0.0
        start = time.perf_counter()
        pool = concurrent.futures.ThreadPoolExecutor(self.num_workers)
        pending = collections.deque()
        try:
            for index in range(min(self.buffer_size, self.count)):
                pending.append(pool.submit(self._produce, index))
            submitted = len(pending)
            while pending:
                asked = time.perf_counter()
                item = pending.popleft().result()
                self.wait_seconds += time.perf_counter() - asked
                if submitted < self.count:
                    pending.append(pool.submit(self._produce, submitted))
                    submitted += 1
                self.elapsed_seconds = time.perf_counter() - start
                yield item
                self.elapsed_seconds = time.perf_counter() - start
        finally:
            pool.shutdown(wait=True, cancel_futures=True)


def prefetch(
    sampler,
    epoch: int = 0,
    *,
    buffer_size: int = 4,
    num_workers: int = 1,
    transfer: Callable[[Any], Any] | None = None,
) -> Prefetcher:
    """The batches of one epoch of `sampler` (`batch(epoch, i)`, `len`), made ahead. Host.

    Args:
      sampler: anything with `batch(epoch, index)` and `len`, e.g. a `NeighborSampler`.
      epoch: the epoch.
      buffer_size: batches in flight or ready at a time.
      num_workers: threads that sample.
      transfer: applied to each batch on the worker thread (e.g. `jax.device_put`); None
        leaves batches as made.

    Returns:
      The `Prefetcher` of `len(sampler)` batches.
    """
    return Prefetcher(lambda index: sampler.batch(epoch, index), len(sampler),
                      buffer_size=buffer_size, num_workers=num_workers, transfer=transfer)


def prefetch_per_device(
    sampler,
    epoch: int,
    num_devices: int,
    *,
    buffer_size: int = 4,
    num_workers: int = 1,
    transfer: Callable[[Any], Any] | None = None,
) -> Prefetcher:
    """One epoch as steps of `num_devices` batches, a list per step, each device its own. Host.

    Step `t` holds batches `t D .. t D + D - 1` of the epoch; past its end come batches without
    seeds (`sampler.empty()`, all masked), so every step has `D` batches of one shape. Pass
    `transfer=strategy.shard_device_batches` to lay each step out over the devices.

    Args:
      sampler: a `NeighborSampler` or `LinkNeighborSampler`.
      epoch: the epoch.
      num_devices: batches per step, `D`.
      buffer_size: steps in flight or ready at a time.
      num_workers: threads that sample.
      transfer: applied to each step's list on the worker thread.

    Returns:
      The `Prefetcher` of `ceil(len(sampler) / D)` steps.
    """
    if num_devices < 1:
        raise ValueError(f"num_devices must be positive; got {num_devices}.")
    n_batch = len(sampler)

    def make(step: int) -> list:
        indices = range(step * num_devices, (step + 1) * num_devices)
        return [sampler.batch(epoch, i) if i < n_batch else sampler.empty() for i in indices]

    return Prefetcher(make, -(-n_batch // num_devices), buffer_size=buffer_size,
                      num_workers=num_workers, transfer=transfer)
