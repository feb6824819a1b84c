"""The relational demo's data: the Lahman database as a temporal typed graph with one task's
seeds, the fixed-shape temporal sampler, and the model inputs. Host.

The seeds of the three splits (training seasons `train_from`-2018, validation 2020-2021, test
2022-2023) form one node set, each timed by its seed season; the sampler starts from them and
draws, at every hop, only rows and edges timed at or before the seed season: the player's row,
then its `fanout` most recent rows of each table that refers to players (appearances, batting,
pitching, All-Star games, salaries, awards), then each such row's team season.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from gnkit.demos.rdl.config import RDLConfig
from gnkit.rdl import DatabaseGraph, EntityTask, TaskTable, database_graph, lahman
from gnkit.rdl.tasks import SEED_SET, task_table, with_seeds
from gnkit.sampling import TypedNeighborSampler
from gnkit.typed_graph import EdgeSetKey, TypedGraph

SPLITS = ("train", "valid", "test")


@dataclasses.dataclass(frozen=True)
class RDLData:
    """What the models train and are tested on.

    Attributes:
      task: the `EntityTask`.
      database: the `DatabaseGraph` (features standardised on rows up to 2018).
      graph: the database graph with the seeds of every split as the node set `seed`.
      tables: `{split: TaskTable}`.
      seed_rows: `{split: int [n]}`, the split's rows of the seed node set.
      fanouts: `{EdgeSetKey: (per hop, ...)}` the sampler draws.
      connection: the DuckDB connection (for the baselines' SQL).
    """

    task: EntityTask
    database: DatabaseGraph
    graph: TypedGraph
    tables: dict
    seed_rows: dict
    fanouts: dict
    connection: object

    @property
    def edge_sets(self) -> list[EdgeSetKey]:
        """The edge sets the sampler draws, in order."""
        return list(self.fanouts)


def split_seasons(config: RDLConfig) -> dict[str, tuple[int, ...]]:
    """The seed seasons of each split."""
    return {"train": tuple(range(config.train_from, lahman.TRAIN_SEASONS[-1] + 1)),
            "valid": lahman.VALID_SEASONS, "test": lahman.TEST_SEASONS}


def sampled_edge_sets(graph: TypedGraph, config: RDLConfig) -> dict:
    """Fanouts per edge set and hop: one player row per seed; the `fanout` most recent rows of
    each table into the player; one team season per row."""
    fanouts = {}
    for key in graph.edges:
        sender, receiver = key.node_sets
        if receiver == SEED_SET:
            count = 1
        elif receiver == "People" and not key.name.startswith("rev:"):
            count = config.fanout
        elif sender == "Teams":
            count = 1
        else:
            continue
        fanouts[key] = (count,) * config.layers
    return fanouts


def load_data(config: RDLConfig, run_dir=None, progress: bool = True) -> RDLData:
    """The Lahman database, the task's rows of every split and the sampled edge sets (nothing
    is cached in `run_dir`: the database reads in seconds). Host."""
    if progress:
        print("reading the Lahman database into a typed graph", flush=True)
    connection = lahman.connect()
    database = database_graph(connection, lahman.SCHEMA, known_until=lahman.TRAIN_SEASONS[-1])
    task = lahman.TASKS[config.task]
    tables = {split: task_table(connection, database, task, seasons)
              for split, seasons in split_seasons(config).items()}
    if config.eval_limit:
        tables.update({split: _first(tables[split], config.eval_limit)
                       for split in ("valid", "test")})
    joined = TaskTable(
        np.concatenate([tables[s].entity_rows for s in SPLITS]),
        np.concatenate([tables[s].seed_time for s in SPLITS]),
        np.concatenate([tables[s].label for s in SPLITS]),
        sum(tables[s].unmatched for s in SPLITS),
    )
    starts = np.cumsum([0] + [tables[s].label.size for s in SPLITS])
    seed_rows = {split: np.arange(starts[i], starts[i + 1]) for i, split in enumerate(SPLITS)}
    graph = with_seeds(database, task.entity_table, joined)
    return RDLData(task, database, graph, tables, seed_rows, sampled_edge_sets(graph, config),
                   connection)


def _first(table: TaskTable, count: int) -> TaskTable:
    return TaskTable(table.entity_rows[:count], table.seed_time[:count], table.label[:count],
                     table.unmatched)


def sampler(config: RDLConfig, data: RDLData, split: str, seed: int) -> TypedNeighborSampler:
    """The temporal sampler of `split`'s seeds (shuffled for training).

    Args:
      config: the run's config (fanout, batch size, layers).
      data: the `RDLData`.
      split: `train`, `valid` or `test`.
      seed: the sampler's seed (its draws and, for training, its epoch order).

    Returns:
      The `TypedNeighborSampler` (temporal, most recent rows first).
    """
    return TypedNeighborSampler(
        data.graph, data.fanouts, config.batch_size, seed_set=SEED_SET,
        seeds=data.seed_rows[split], shuffle=split == "train", seed=seed, temporal=True,
        strategy="last",
    )


def model_input(sample, labels: np.ndarray) -> dict:
    """A `TypedSample` as the model's batch: `graph` (ids dropped), `roots`, the seed slots'
    `labels` `[S]` and `mask` `[S]`."""
    graph = sample.graph
    nodes = {name: node_set._replace(global_id=None) for name, node_set in graph.nodes.items()}
    slots = sample.seed_mask.size
    seed_ids = sample.graph.nodes[SEED_SET].global_id[:slots]
    slot_labels = np.where(sample.seed_mask, labels[np.maximum(seed_ids, 0)], 0.0)
    return {"graph": graph._replace(nodes=nodes),
            "roots": {name: root.astype(np.int32) for name, root in sample.roots.items()},
            "labels": slot_labels.astype(np.float32), "mask": sample.seed_mask}


def make_batch(name: str, config: RDLConfig, data: RDLData) -> Callable[[int], dict]:
    """`update -> batch` of training seeds for replicate `name`: epoch `update // batches per
    epoch`, each epoch in its own order, drawn from the replicate's seed; a pure function of
    the update."""
    train = sampler(config, data, "train", config.replicate_seed(name))
    all_labels = np.concatenate([data.tables[s].label for s in SPLITS])

    def batch(update: int) -> dict:
        epoch, index = divmod(update, len(train))
        return model_input(train.batch(epoch, index), all_labels)

    return batch


def eval_batches(config: RDLConfig, data: RDLData, split: str) -> list[dict]:
    """Every seed of `split` once, in order, as model batches (the sample of a seed is fixed:
    the same batches at every evaluation)."""
    evaluation = sampler(config, data, split, config.seed)
    all_labels = np.concatenate([data.tables[s].label for s in SPLITS])
    return [model_input(evaluation.batch(0, index), all_labels)
            for index in range(len(evaluation))]
