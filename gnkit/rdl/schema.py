"""A relational schema over a DuckDB connection: tables, keys and time columns, checked up front.

A `Table` names its primary key (one or more columns, or none), its foreign keys (columns that
point at another table's primary key), the column that times each row (an integer such as a
season, or a date or timestamp), and the columns to leave out (identifiers, free text, columns
that encode the future). `check_schema` reads only the connection's catalogue, a few counts and
the time columns' ranges, and turns every mistake into one `SchemaError` that names the table,
the column or the key, before any work. Host.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import numpy as np

from gnkit.rdl import times

INTEGER_TYPES = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT",
                 "UINTEGER", "UBIGINT")
FLOAT_TYPES = ("FLOAT", "DOUBLE", "REAL")
TIME_TYPES = ("DATE", "TIMESTAMP", "TIMESTAMP WITH TIME ZONE")
NUMERIC_KEY_TYPES = (*INTEGER_TYPES, *FLOAT_TYPES, "DECIMAL")


class SchemaError(ValueError):
    """A schema that does not fit its database: the message names the table and column."""


@dataclasses.dataclass(frozen=True)
class ForeignKey:
    """Columns of a table that point at the primary key of `table`.

    Attributes:
      columns: the referencing columns, in the order of the referenced primary key.
      table: the referenced table.
    """

    columns: tuple[str, ...]
    table: str

    @property
    def name(self) -> str:
        """`<columns>-><table>`, e.g. `playerID->People` (the edge set's name)."""
        return f"{'+'.join(self.columns)}->{self.table}"


@dataclasses.dataclass(frozen=True)
class Table:
    """One table of a schema: a node set of the database graph.

    Attributes:
      name: the table (or view) in the connection.
      primary_key: its key columns; empty for a table whose rows nothing refers to.
      foreign_keys: its references to other tables.
      time_column: the column that times each row (integer, date or timestamp), or None for a
        table whose rows are known at every time.
      drop: columns that are not features (names, free text, columns that encode the future).
    """

    name: str
    primary_key: tuple[str, ...] = ()
    foreign_keys: tuple[ForeignKey, ...] = ()
    time_column: str | None = None
    drop: tuple[str, ...] = ()

    @property
    def key_columns(self) -> set[str]:
        """Every column that is a key or the time: none of them is a feature."""
        columns = set(self.primary_key) | {c for key in self.foreign_keys for c in key.columns}
        return columns | ({self.time_column} if self.time_column else set())


@dataclasses.dataclass(frozen=True)
class Schema:
    """Tables by name.

    Attributes:
      tables: the schema's tables, in order (their order is the node sets' order).
    """

    tables: tuple[Table, ...]

    def table(self, name: str) -> Table:
        """The table called `name`; `SchemaError` listing the tables otherwise."""
        for table in self.tables:
            if table.name == name:
                return table
        raise SchemaError(f"no table {name!r} in the schema; tables: "
                          f"{[table.name for table in self.tables]}")


def column_types(connection, table: str) -> dict[str, str]:
    """`{column: DuckDB type}` of `table`, in column order; `SchemaError` if it does not exist."""
    rows = connection.execute(
        "SELECT column_name, data_type FROM information_schema.columns "
        "WHERE table_name = ? ORDER BY ordinal_position", [table]
    ).fetchall()
    if not rows:
        raise SchemaError(f"table {table!r}: not in the database")
    return dict(rows)


def quoted(name: str) -> str:
    """`name` as a DuckDB identifier (double quotes, inner quotes doubled)."""
    return '"' + name.replace('"', '""') + '"'


def _check_columns(table: Table, types: Mapping[str, str], columns: Sequence[str], role: str):
    missing = [column for column in columns if column not in types]
    if missing:
        raise SchemaError(f"table {table.name!r}: {role} column(s) {missing} not found; columns: "
                          f"{list(types)}")


def check_schema(connection, schema: Schema) -> dict[str, dict[str, str]]:
    """Check `schema` against the database; return `{table: {column: type}}`.

    Args:
      connection: an open `duckdb` connection.
      schema: the schema to check.

    Returns:
      Each table's columns and their DuckDB types.

    Raises:
      SchemaError: a table or column that does not exist, a primary key that is not unique or
        has NULLs, a foreign key that names a table outside the schema, whose width differs
        from the referenced key or a column of which has another type than the key column it
        refers to (any two numeric types match, by value), or a time column that is not an
        integer, date or timestamp or whose times do not fit int32 (`gnkit.rdl.times`).
    """
    names = [table.name for table in schema.tables]
    if len(set(names)) != len(names):
        repeated = sorted({name for name in names if names.count(name) > 1})
        raise SchemaError(f"tables named more than once: {repeated}")
    types = {table.name: column_types(connection, table.name) for table in schema.tables}
    for table in schema.tables:
        own = types[table.name]
        _check_columns(table, own, table.primary_key, "primary key")
        _check_columns(table, own, table.drop, "dropped")
        for key in table.foreign_keys:
            _check_columns(table, own, key.columns, f"foreign key {key.name}")
            if key.table not in types:
                raise SchemaError(f"table {table.name!r}: foreign key {key.name} names a table "
                                  f"outside the schema; tables: {names}")
            target = schema.table(key.table)
            if len(target.primary_key) != len(key.columns):
                raise SchemaError(
                    f"table {table.name!r}: foreign key {key.name} has {len(key.columns)} "
                    f"column(s), the primary key of {key.table!r} {list(target.primary_key)}"
                )
            _check_key_types(table, key, own, types[key.table], target.primary_key)
        if table.time_column is not None:
            _check_columns(table, own, (table.time_column,), "time")
            kind = own[table.time_column]
            if kind not in INTEGER_TYPES and not kind.startswith(TIME_TYPES):
                raise SchemaError(f"table {table.name!r}: time column {table.time_column!r} is "
                                  f"{kind}; expected an integer, a DATE or a TIMESTAMP")
            _check_time_range(connection, table)
        if table.primary_key:
            _check_unique(connection, table)
    return types


def _check_unique(connection, table: Table) -> None:
    columns = ", ".join(quoted(column) for column in table.primary_key)
    nulls = " OR ".join(f"{quoted(column)} IS NULL" for column in table.primary_key)
    total, distinct, null_rows = connection.execute(
        f"SELECT count(*), (SELECT count(*) FROM (SELECT DISTINCT {columns} FROM "
        f"{quoted(table.name)})), count(*) FILTER (WHERE {nulls}) FROM {quoted(table.name)}"
    ).fetchone()
    if null_rows:
        raise SchemaError(f"table {table.name!r}: primary key {list(table.primary_key)} is NULL "
                          f"in {null_rows} row(s)")
    if distinct != total:
        raise SchemaError(f"table {table.name!r}: primary key {list(table.primary_key)} is not "
                          f"unique ({total} rows, {distinct} distinct keys)")


def _check_key_types(table: Table, key: ForeignKey, own: Mapping[str, str],
                     referenced: Mapping[str, str], primary_key: Sequence[str]) -> None:
    """Each referencing column has its key column's type, or both are numeric: the pairs on
    which matching the fetched values in Python agrees with DuckDB's join (which, for one,
    casts text to numbers)."""
    for column, target in zip(key.columns, primary_key, strict=True):
        kind, target_kind = own[column], referenced[target]
        numeric = all(k.startswith(NUMERIC_KEY_TYPES) for k in (kind, target_kind))
        if kind != target_kind and not numeric:
            raise SchemaError(
                f"table {table.name!r}: foreign key {key.name}: column {column!r} is {kind} "
                f"and the key column '{key.table}.{target}' it refers to is {target_kind}; "
                f"give both the same type (any two numeric types match), e.g. with a CAST in a "
                f"view"
            )


def _check_time_range(connection, table: Table) -> None:
    column = quoted(table.time_column)
    bounds = connection.execute(
        f"SELECT min({column}) AS low, max({column}) AS high, CAST(min({column}) AS VARCHAR) "
        f"AS low_text, CAST(max({column}) AS VARCHAR) AS high_text FROM {quoted(table.name)}"
    ).fetchnumpy()
    low, high = bounds["low"], bounds["high"]
    if np.ma.getmaskarray(low).all():
        return  # no row has a time
    datetimes = np.issubdtype(np.ma.getdata(low).dtype, np.datetime64)
    if datetimes:
        low, high = times.seconds(low, round_up=True), times.seconds(high, round_up=True)
    if times.ALWAYS <= np.ma.getdata(low)[0] and np.ma.getdata(high)[0] <= times.NEVER:
        return
    allowed = (f"int32 seconds since 1970-01-01, {times.DATETIME_RANGE}" if datetimes
               else f"int32, {times.ALWAYS} to {times.NEVER}")
    raise SchemaError(
        f"table {table.name!r}: time column {table.time_column!r} runs from "
        f"{bounds['low_text'][0]} to {bounds['high_text'][0]}; times must be {allowed}"
    )
