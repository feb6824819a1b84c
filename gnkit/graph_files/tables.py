"""One table of a graph's files, read as text: `read_table` (CSV or Parquet through DuckDB) and
`Table`, whose columns are looked up and whose rows are named in one-line errors. Host."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np

from gnkit.extras import import_optional

SUFFIXES = {".csv": "csv", ".tsv": "csv", ".txt": "csv", ".parquet": "parquet", ".pq": "parquet"}


class GraphFileError(ValueError):
    """Bad graph input; the message is one line naming the file (or object), column and row."""


@dataclasses.dataclass(frozen=True)
class Table:
    """A table as text: every cell a `str`, or `None` where it is empty.

    Attributes:
      name: how errors name the table: a path, `--nodes N.csv`, or `networkx nodes`.
      columns: object arrays `[rows]` by column name, in the table's column order.
      locate: `row -> str`, where row `row` (0-based) is, e.g. `N.csv line 7` (CSV lines count
        the header as line 1) or `N.parquet row 6`.
    """

    name: str
    columns: Mapping[str, np.ndarray]
    locate: Callable[[int], str]

    @property
    def num_rows(self) -> int:
        """The number of data rows."""
        return len(next(iter(self.columns.values()))) if self.columns else 0

    def column(self, name: str, setting: str) -> np.ndarray:
        """Column `name` (`[rows]`, str or None); `GraphFileError` naming `setting` (the
        argument or flag that named it) and the table's columns if there is none."""
        if name not in self.columns:
            raise GraphFileError(
                f"{self.name}: no column {name!r} ({setting}); its columns: "
                f"{', '.join(self.columns) or 'none'}"
            )
        return self.columns[name]

    def require_cells(self, name: str, setting: str) -> np.ndarray:
        """Column `name` with a value in every row; else the first empty cell is named."""
        values = self.column(name, setting)
        empty = np.flatnonzero(np.equal(values, None))
        if empty.size:
            raise GraphFileError(f"{self.locate(int(empty[0]))}: column {name!r} is empty")
        return values

    def numbers(self, name: str, setting: str) -> np.ndarray:
        """Column `name` as float64 `[rows]`; the first empty, non-numeric or non-finite cell
        is named."""
        values = self.require_cells(name, setting)
        try:
            numbers = values.astype(np.float64)
        except ValueError:  # find the first cell that is not a number
            for row, text in enumerate(values):
                try:
                    float(text)
                except ValueError:
                    raise GraphFileError(
                        f"{self.locate(row)}: column {name!r} holds {text!r}, not a number"
                    ) from None
            raise
        infinite = np.flatnonzero(~np.isfinite(numbers))
        if infinite.size:
            row = int(infinite[0])
            raise GraphFileError(f"{self.locate(row)}: column {name!r} holds {values[row]!r}")
        return numbers


def _text(value) -> str | None:
    if value is None or value is np.ma.masked:
        return None
    text = str(value)
    return text if text.strip() else None


def table_from_columns(
    name: str, columns: Mapping[str, object], locate: Callable[[int], str]
) -> Table:
    """A `Table` from columns of any values (`None` or blank: empty), each made text.

    Args:
      name: how errors name the table.
      columns: sequences `[rows]` of one length, by column name.
      locate: `row -> str`, where a row is.

    Returns:
      The `Table`.
    """
    text = {key: np.array([_text(value) for value in values], object)
            for key, values in columns.items()}
    lengths = {len(values) for values in text.values()}
    if len(lengths) > 1:
        raise GraphFileError(f"{name}: columns of different lengths {sorted(lengths)}")
    return Table(name, text, locate)


def read_table(path: str | Path, name: str | None = None) -> Table:
    """Read a CSV (`.csv`, `.tsv`, `.txt`, with a header line) or Parquet (`.parquet`, `.pq`)
    file through DuckDB, every column as text (ids keep leading zeros; numbers are parsed
    where a column is used, so a bad cell is named there). Host.

    Args:
      path: the file.
      name: how errors name it (default: the path).

    Returns:
      The `Table`; CSV rows are located as `line <n>` (the header is line 1), Parquet rows as
      `row <n>` (from 1).

    Raises:
      GraphFileError: no such file, an unknown suffix, or a file DuckDB cannot read.
      gnkit.extras.MissingExtraError: DuckDB is not installed.
    """
    path = Path(path)
    name = str(path) if name is None else name
    kind = SUFFIXES.get(path.suffix.lower())
    if kind is None:
        raise GraphFileError(f"{name}: expected a .csv, .tsv or .parquet file")
    if not path.is_file():
        raise GraphFileError(f"{name}: no such file")
    duckdb = import_optional("duckdb", "reading graph files")
    reader = (
        "read_csv(?, all_varchar = true, header = true)" if kind == "csv" else "read_parquet(?)"
    )
    connection = duckdb.connect()
    try:
        relation = connection.execute(f"SELECT * FROM {reader} LIMIT 0", [str(path)])
        names = [column[0] for column in relation.description]
        casts = ", ".join(f'CAST("{column}" AS VARCHAR)' for column in names)
        values = connection.execute(f"SELECT {casts} FROM {reader}", [str(path)]).fetchnumpy()
    except duckdb.Error as error:
        reason = str(error).strip().splitlines()[0]
        raise GraphFileError(f"{name}: not a readable {kind} table ({reason})") from None
    finally:
        connection.close()
    columns = dict(zip(names, values.values(), strict=True))
    offset, word = (2, "line") if kind == "csv" else (1, "row")
    return table_from_columns(name, columns, lambda row: f"{name} {word} {row + offset}")
