"""The relational demo's baselines, on the same splits as the GNN: LightGBM on the entity
table's own columns (RelBench's baseline), LightGBM on features aggregated in SQL from rows up to
the seed season (the data scientist's), and the floors (majority or mean; persistence: the seed
season's own value where the task has one). Host.
"""

from __future__ import annotations

import numpy as np

from gnkit.demos.rdl.config import RDLConfig
from gnkit.demos.rdl.data import split_seasons
from gnkit.rdl import EntityTask, lahman, task_metrics
from gnkit.rdl.graph import objects

# The seed season's value of the label's quantity, where there is one.
PERSISTENCE = {"player-allstar": "last_allstar", "player-games": "last_games"}


def feature_table(connection, query: str, seasons, limit: int = 0) -> dict[str, np.ndarray]:
    """The columns of `query` (a `lahman.*_features_query`) for `seasons`, text as objects.

    Args:
      connection: the database's `duckdb` connection.
      query: the SQL, with `{seed_times}` to fill.
      seasons: the seed seasons.
      limit: keep the first `limit` rows (0: all).

    Returns:
      `{column: array [n]}`.
    """
    values = connection.execute(query.format(seed_times=", ".join(map(str, seasons))))
    table = values.fetchnumpy()
    return {key: value[:limit] if limit else value for key, value in table.items()}


def _matrix(tables: dict[str, dict], columns: list[str]):
    """Float features `[n, F]` per split (NULL as NaN) and the indices of the categorical ones;
    text columns coded by the training split's values (others -1)."""
    categorical = [i for i, c in enumerate(columns) if tables["train"][c].dtype == object]
    codes = {}
    for index in categorical:
        column = columns[index]
        known = objects(tables["train"][column])
        codes[column] = {v: i for i, v in enumerate(sorted({str(v) for v in known if v}))}
    matrices = {}
    for split, table in tables.items():
        parts = []
        for column in columns:
            raw = table[column]
            if column in codes:
                filled = objects(raw)
                parts.append(np.array([codes[column].get(str(v), -1) if v else -1
                                       for v in filled], np.float64))
            else:
                parts.append(np.ma.filled(np.ma.asarray(raw).astype(np.float64), np.nan))
        matrices[split] = np.stack(parts, 1)
    return matrices, categorical


def lightgbm_predictions(task: EntityTask, tables: dict[str, dict], seed: int) -> dict:
    """LightGBM fitted on the training rows of `tables` (every column but the keys and the
    label), stopped early on validation; `{split: predictions}` for validation and test."""
    import lightgbm

    columns = [c for c in tables["train"] if c not in ("playerID", "seed_time", "label")]
    matrices, categorical = _matrix(tables, columns)
    binary = task.kind == "binary"
    params = {"objective": "binary" if binary else "l1", "learning_rate": 0.05,
              "num_leaves": 31, "min_data_in_leaf": 20, "verbose": -1, "seed": seed,
              "num_threads": 2, "deterministic": True}
    datasets = {split: lightgbm.Dataset(matrices[split], np.asarray(tables[split]["label"]),
                                        categorical_feature=categorical, free_raw_data=False)
                for split in ("train", "valid")}
    booster = lightgbm.train(params, datasets["train"], num_boost_round=1000,
                             valid_sets=[datasets["valid"]],
                             callbacks=[lightgbm.early_stopping(50, verbose=False)])
    return {split: booster.predict(matrices[split], num_iteration=booster.best_iteration)
            for split in ("valid", "test")}


def baselines(config: RDLConfig, connection, task: EntityTask) -> dict[str, dict]:
    """`{baseline: {split: metrics}}` for validation and test."""
    seasons = split_seasons(config)

    def tables(query):
        return {split: feature_table(connection, query, seasons[split],
                                     config.eval_limit if split != "train" else 0)
                for split in ("train", "valid", "test")}

    entity = tables(lahman.entity_features_query(task))
    aggregate = tables(lahman.aggregate_features_query(task))
    results = {}
    for name, features in (("lightgbm_entity", entity), ("lightgbm_sql", aggregate)):
        predictions = lightgbm_predictions(task, features, config.seed)
        results[name] = {split: task_metrics(task.kind, np.asarray(features[split]["label"]),
                                             predictions[split]) for split in ("valid", "test")}
    train_labels = np.asarray(aggregate["train"]["label"], np.float64)
    constant = np.median(train_labels) if task.kind == "regression" else train_labels.mean()
    results["majority" if task.kind == "binary" else "median"] = {
        split: task_metrics(task.kind, np.asarray(aggregate[split]["label"]),
                            np.full(len(aggregate[split]["label"]), constant))
        for split in ("valid", "test")
    }
    if task.name in PERSISTENCE:
        column = PERSISTENCE[task.name]
        results["persistence"] = {
            split: task_metrics(task.kind, np.asarray(aggregate[split]["label"]),
                                np.ma.filled(aggregate[split][column].astype(np.float64), 0))
            for split in ("valid", "test")
        }
    return results
