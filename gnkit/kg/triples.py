"""Knowledge graphs from triple files: `head<TAB>relation<TAB>tail`, one triple a line.

`read_triples` reads one file (plain, or xz-compressed when the name ends in `.xz`);
`load_graph` reads a graph's `train`, `valid` and `test` splits from a directory (or one of the
graphs shipped in `gnkit/data/kg`: `kinships`, `nations`, `umls`) and numbers its entities and
relations in order of first appearance in the training split. Malformed lines and entities or
relations that the training split never names raise `TripleFileError` naming the file and line.
Host, NumPy.
"""

from __future__ import annotations

import dataclasses
import importlib.resources
import lzma
from collections.abc import Sequence
from pathlib import Path

import numpy as np

SPLITS = ("train", "valid", "test")
#: The graphs shipped in `gnkit/data/kg`, loadable by name.
SHIPPED = ("kinships", "nations", "umls")


class TripleFileError(ValueError):
    """A triple file that cannot be read, or names something the training split does not."""


@dataclasses.dataclass(frozen=True)
class KnowledgeGraph:
    """A knowledge graph's splits as index arrays `[n, 3]` int32 `(head, relation, tail)`,
    with the entity and relation names behind the indices.

    Attributes:
      entities: the entity names; an entity's index is its position.
      relations: the relation names, likewise.
      train: int32 `[n, 3]` `(head, relation, tail)`, the training split.
      valid: int32 `[n, 3]`, the validation split.
      test: int32 `[n, 3]`, the test split.
    """

    entities: tuple[str, ...]
    relations: tuple[str, ...]
    train: np.ndarray
    valid: np.ndarray
    test: np.ndarray

    @property
    def num_entities(self) -> int:
        return len(self.entities)

    @property
    def num_relations(self) -> int:
        return len(self.relations)

    def known(self) -> np.ndarray:
        """Every true triple of the three splits, `[n, 3]`: the usual filter of the rankings."""
        return np.concatenate([self.train, self.valid, self.test])


def read_triples(path: str | Path) -> list[tuple[str, str, str]]:
    """The triples of one file, as name strings. Blank lines are skipped; a line without
    exactly three non-empty tab-separated fields raises `TripleFileError` naming
    `path:line`."""
    path = Path(path)
    opener = lzma.open if path.suffix == ".xz" else open
    try:
        with opener(path, "rt", encoding="utf-8") as file:
            lines = file.read().splitlines()
    except (OSError, lzma.LZMAError, UnicodeDecodeError) as error:
        raise TripleFileError(f"{path}: cannot read triples ({type(error).__name__})") from None
    triples = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != 3 or not all(field.strip() for field in fields):
            raise TripleFileError(
                f"{path}:{number}: expected head<TAB>relation<TAB>tail, found {line[:80]!r}"
            )
        triples.append(tuple(field.strip() for field in fields))
    if not triples:
        raise TripleFileError(f"{path}: no triples")
    return triples


def _split_file(directory: Path, split: str) -> Path:
    for name in (f"{split}.txt", f"{split}.txt.xz", f"{split}.tsv", f"{split}.tsv.xz"):
        if (directory / name).exists():
            return directory / name
    raise TripleFileError(f"{directory}: no {split}.txt (or .txt.xz, .tsv)")


def _indices(triples, entity_index, relation_index, path: Path) -> np.ndarray:
    rows = np.zeros((len(triples), 3), np.int32)
    for row, (head, relation, tail) in enumerate(triples):
        for column, name, table, kind in (
            (0, head, entity_index, "entity"),
            (1, relation, relation_index, "relation"),
            (2, tail, entity_index, "entity"),
        ):
            if name not in table:
                raise TripleFileError(
                    f"{path}: triple {row + 1} ({head}, {relation}, {tail}) names the {kind} "
                    f"{name!r}, which the training split never does"
                )
            rows[row, column] = table[name]
    return rows


def graph_directory(name_or_path: str | Path) -> Path:
    """The directory of a shipped graph (`kinships`, `nations`, `umls`) or `name_or_path`."""
    if str(name_or_path) in SHIPPED:
        return Path(str(importlib.resources.files("gnkit") / "data" / "kg" / str(name_or_path)))
    return Path(name_or_path)


def load_graph(name_or_path: str | Path) -> KnowledgeGraph:
    """The splits of a shipped graph or of a directory holding `train.txt`, `valid.txt` and
    `test.txt` (each may be `.xz`). Entities and relations are numbered by first appearance in
    `train`; a valid or test triple naming anything else raises `TripleFileError`."""
    directory = graph_directory(name_or_path)
    if not directory.is_dir():
        known = ", ".join(SHIPPED)
        raise TripleFileError(f"{name_or_path}: not a directory of triple files nor one of {known}")
    paths = {split: _split_file(directory, split) for split in SPLITS}
    named = {split: read_triples(path) for split, path in paths.items()}
    entity_index: dict[str, int] = {}
    relation_index: dict[str, int] = {}
    for head, relation, tail in named["train"]:
        entity_index.setdefault(head, len(entity_index))
        relation_index.setdefault(relation, len(relation_index))
        entity_index.setdefault(tail, len(entity_index))
    splits = {
        split: _indices(named[split], entity_index, relation_index, paths[split])
        for split in SPLITS
    }
    return KnowledgeGraph(tuple(entity_index), tuple(relation_index), **splits)


def from_arrays(
    train: np.ndarray, valid: np.ndarray, test: np.ndarray, num_entities: int, num_relations: int,
    names: Sequence[str] | None = None,
) -> KnowledgeGraph:
    """A `KnowledgeGraph` from index arrays (a synthetic graph, say). Host.

    Args:
      train: int `[n, 3]` `(head, relation, tail)` indices.
      valid: int `[n, 3]`.
      test: int `[n, 3]`.
      num_entities: entities in the graph; indices must lie below it.
      num_relations: relations in the graph; relations are named `r0, r1, ...`.
      names: the entities' names, or None for `e0, e1, ...`.

    Returns:
      The `KnowledgeGraph`; `ValueError` if an index is out of range.
    """
    entities = tuple(names) if names is not None else tuple(f"e{i}" for i in range(num_entities))
    relations = tuple(f"r{i}" for i in range(num_relations))
    arrays = [np.asarray(split, np.int32).reshape(-1, 3) for split in (train, valid, test)]
    for split, array in zip(SPLITS, arrays, strict=True):
        if array.size and (array[:, [0, 2]].max() >= num_entities or array.min() < 0
                           or array[:, 1].max() >= num_relations):
            raise ValueError(f"from_arrays: {split} holds an index out of range")
    return KnowledgeGraph(entities, relations, *arrays)
