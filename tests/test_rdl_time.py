"""gnkit.rdl's time rule: dates and timestamps are compared to the second (a row later on a
seed's own day, or later inside its second, is after the seed; the temporal sampler shows none
of them to it), seed times a task returns as timestamps get the same seconds, times outside
int32 are refused, and rows with a NULL time are hidden from every seed unless asked for,
counted either way."""

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
    database_graph,
    task_table,
    with_seeds,
)
from gnkit.rdl.tasks import SEED_SET  # noqa: E402
from gnkit.rdl.times import ALWAYS, NEVER  # noqa: E402
from gnkit.sampling import TypedNeighborSampler  # noqa: E402
from gnkit.typed_graph import EdgeSetKey  # noqa: E402

DAY, HOUR = 86400, 3600
SCHEMA = Schema((
    Table("users", ("id",)),
    Table("visits", ("id",), (ForeignKey(("user_id",), "users"),), "visited"),
))
VISITS = EdgeSetKey("user_id->users", ("visits", "users"))
ENTITY = EdgeSetKey("entity", ("users", SEED_SET))
# Visits of the next day after each seed (a label window that starts at the seed time).
NEXT_DAY = EntityTask(
    "next-day-visits", "users", ("id",),
    "SELECT u.id, s.t AS seed_time, (SELECT count(*) FROM visits v WHERE v.user_id = u.id "
    "AND v.visited > make_timestamp(s.t * 1000000) "
    "AND v.visited <= make_timestamp((s.t + 86400) * 1000000)) AS label "
    "FROM users u, (SELECT unnest([{seed_times}])::BIGINT AS t) s ORDER BY s.t",
    "regression",
)


@pytest.fixture
def visits():
    """One user's visits: 1970-01-02 at 08:00 and 20:00, 1970-01-03 half a second after
    midnight, and one with no time."""
    connection = duckdb.connect()
    connection.execute("""
        CREATE TABLE users (id INTEGER, country VARCHAR);
        INSERT INTO users VALUES (1, 'fr');
        CREATE TABLE visits (id INTEGER, user_id INTEGER, visited TIMESTAMP, pages DOUBLE);
        INSERT INTO visits VALUES (1, 1, TIMESTAMP '1970-01-02 08:00:00', 3.0),
                                  (2, 1, TIMESTAMP '1970-01-02 20:00:00', 5.0),
                                  (3, 1, TIMESTAMP '1970-01-03 00:00:00.5', 7.0),
                                  (4, 1, NULL, 100.0);
    """)
    return connection


def _visible_visits(graph, seeds: int) -> list[list[int]]:
    """The visits the temporal sampler draws for each of the first `seeds` seeds."""
    sampler = TypedNeighborSampler(graph, {ENTITY: (1, 1), VISITS: (8, 8)}, seeds,
                                   seed_set=SEED_SET, shuffle=False, temporal=True)
    sample = sampler.batch(0, 0)
    ids, roots = sample.graph.nodes["visits"].global_id, sample.roots["visits"]
    return [sorted(ids[roots == slot].tolist()) for slot in range(seeds)]


def test_timestamps_are_seconds_rounded_up(visits):
    database = database_graph(visits, SCHEMA)
    times = [DAY + 8 * HOUR, DAY + 20 * HOUR, 2 * DAY + 1, NEVER]
    np.testing.assert_array_equal(database.graph.nodes["visits"].time, times)
    np.testing.assert_array_equal(database.graph.edges[VISITS].time, times)
    np.testing.assert_array_equal(database.graph.nodes["users"].time, [ALWAYS])


def test_a_seed_inside_the_day_sees_no_row_of_its_label_window(visits):
    database = database_graph(visits, SCHEMA)
    noon, midnight = DAY + 12 * HOUR, 2 * DAY
    table = task_table(visits, database, NEXT_DAY, [noon, midnight])
    np.testing.assert_array_equal(table.seed_time, [noon, midnight])
    # Noon: the 20:00 and 00:00:00.5 visits come next; midnight: the 00:00:00.5 one.
    np.testing.assert_array_equal(table.label, [2, 1])
    graph = with_seeds(database, "users", table)
    # Noon sees the 08:00 visit; midnight the 08:00 and 20:00 ones, not the one half a second
    # after it; no seed sees the visit without a time.
    assert _visible_visits(graph, 2) == [[0], [0, 1]]


def test_seed_times_returned_as_timestamps_are_whole_seconds(visits):
    database = database_graph(visits, SCHEMA)
    task = EntityTask("at-noon", "users", ("id",),
                      "SELECT id, TIMESTAMP '1970-01-02 12:00:00.7' AS seed_time, 0 AS label "
                      "FROM users", "regression")
    table = task_table(visits, database, task, [])
    np.testing.assert_array_equal(table.seed_time, [DAY + 12 * HOUR])  # rounded down
    untimed = dataclasses.replace(task, query="SELECT id, NULL::TIMESTAMP AS seed_time, "
                                              "0 AS label FROM users")
    with pytest.raises(TaskError, match="task at-noon: the query returns NULL seed times"):
        task_table(visits, database, untimed, [])
    late = dataclasses.replace(task, query="SELECT id, TIMESTAMP '2040-01-01' AS seed_time, "
                                           "0 AS label FROM users")
    with pytest.raises(TaskError, match="task at-noon: the query returns seed times from "
                                        "2208988800 to 2208988800; they must fit int32"):
        task_table(visits, database, late, [])


def test_times_outside_int32_are_a_schema_error(visits):
    visits.execute("INSERT INTO visits VALUES (5, 1, TIMESTAMP '2040-01-01 00:00:00', 1.0)")
    with pytest.raises(SchemaError) as error:
        database_graph(visits, SCHEMA)
    assert ("table 'visits': time column 'visited' runs from 1970-01-02 08:00:00 to "
            "2040-01-01 00:00:00") in str(error.value)
    assert "1901-12-13 20:45:52 to 2038-01-19 03:14:07 UTC" in str(error.value)


def test_rows_with_a_null_time_are_hidden_unless_known_at_every_time(visits):
    cutoff = 3 * DAY
    hidden = database_graph(visits, SCHEMA, known_until=cutoff)
    assert hidden.graph.nodes["visits"].time[3] == NEVER
    known = np.array([3.0, 5.0, 7.0])  # the timed visits; the untimed one (100 pages) is not
    pages = np.array([3.0, 5.0, 7.0, 100.0])
    np.testing.assert_allclose(hidden.graph.nodes["visits"].features["numerical"][:, 0],
                               (pages - known.mean()) / known.std(), rtol=1e-6)
    assert hidden.null_times == {"visits": 1}  # beside the dangling references

    kept = database_graph(visits, SCHEMA, known_until=cutoff, null_time_known=True)
    assert kept.graph.nodes["visits"].time[3] == ALWAYS
    np.testing.assert_allclose(kept.graph.nodes["visits"].features["numerical"][:, 0],
                               (pages - pages.mean()) / pages.std(), rtol=1e-6)
    table = task_table(visits, kept, NEXT_DAY, [DAY + 12 * HOUR])
    assert _visible_visits(with_seeds(kept, "users", table), 1) == [[0, 3]]
    assert kept.null_times == {"visits": 1}
