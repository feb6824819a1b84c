"""Prefetch: the same batches in the same order as sampling in the loop, whatever the threads;
waiting is recorded; per-device steps cover the epoch once and shard over a data-parallel mesh."""

import threading

import jax
import numpy as np
from _forced_devices import run_with_devices
from test_sampling import random_graph

from gnkit.sampling import NeighborSampler, Prefetcher, prefetch, prefetch_per_device


def equal_trees(a, b):
    return all(np.array_equal(x, y) for x, y in zip(jax.tree_util.tree_leaves(a),
                                                    jax.tree_util.tree_leaves(b), strict=True))


def test_prefetched_batches_equal_the_plain_epoch():
    graph = random_graph()
    sampler = NeighborSampler(graph, (4, 3), 16, seed=2)
    plain = list(sampler.epoch(3))
    for workers in (1, 3):
        fetched = prefetch(sampler, 3, buffer_size=3, num_workers=workers)
        batches = list(fetched)
        assert len(batches) == len(plain) == len(fetched)
        assert all(equal_trees(a, b) for a, b in zip(batches, plain, strict=True))
        assert 0.0 <= fetched.wait_fraction <= 1.0
        assert fetched.wait_seconds <= fetched.elapsed_seconds


def test_waiting_is_counted_when_the_producer_is_behind():
    released = threading.Event()

    def make(index):
        released.wait()
        return index

    fetcher = Prefetcher(make, 2, buffer_size=2)
    iterator = iter(fetcher)
    threading.Timer(0.05, released.set).start()
    assert list(iterator) == [0, 1]
    assert fetcher.wait_seconds > 0 and fetcher.wait_fraction > 0.5


def test_transfer_runs_on_each_item():
    fetcher = Prefetcher(lambda index: index, 5, transfer=lambda item: item * 10)
    assert list(fetcher) == [0, 10, 20, 30, 40]


def test_per_device_steps_cover_the_epoch_once_and_fill_with_empty_batches():
    graph = random_graph()
    sampler = NeighborSampler(graph, (3,), 8, seeds=np.arange(44), seed=1)
    steps = list(prefetch_per_device(sampler, 0, 4))
    assert len(sampler) == 6 and len(steps) == 2 and all(len(step) == 4 for step in steps)
    flat = [batch for step in steps for batch in step]
    for index in range(6):
        assert equal_trees(flat[index], sampler.batch(0, index))
    assert not flat[6].seed_mask.any() and not flat[7].seed_mask.any()
    seeds = np.concatenate([batch.global_id[:8][batch.seed_mask] for batch in flat])
    assert sorted(seeds) == list(range(44))


_MESH_CODE = """
import jax, numpy as np
from gnkit import parallel
from gnkit.sampling import NeighborSampler, prefetch_per_device
from test_sampling import random_graph
strategy = parallel.data_parallel("mesh")
sampler = NeighborSampler(random_graph(), (3, 2), 8, seeds=np.arange(40), seed=1)
steps = prefetch_per_device(sampler, 0, 2, transfer=strategy.shard_device_batches)
count = 0
for index, step in enumerate(steps):
    for device in range(2):
        position = 2 * index + device
        local = sampler.batch(0, position) if position < len(sampler) else sampler.empty()
        rows = local.global_id.shape[0]
        shard = [s for s in step.global_id.addressable_shards if s.index[0].start == device * rows]
        assert np.array_equal(np.asarray(shard[0].data), local.global_id)
    count += 1
print(count, len(jax.devices()))
"""


def test_per_device_steps_shard_over_a_two_device_mesh():
    import pathlib

    tests = str(pathlib.Path(__file__).parent)
    out = run_with_devices(f"import sys; sys.path.insert(0, {tests!r})\n" + _MESH_CODE, devices=2)
    assert out.split() == ["3", "2"]
