"""SMILES to `GraphsTuple`: one molecule, or a whole data set converted once and cached.

A molecule's graph has its atoms as nodes, each bond as two directed edges (`2k`: begin ->
end atom, `2k + 1`: the reverse; so the reverse of edge `e` is `e ^ 1`, also in a batch, whose
molecules all have even edge counts) and one global row: a zero placeholder `[1, 1]`, or with
`descriptors` the molecule's RDKit 2-D descriptors `[1, D]` (float64, NaN where RDKit fails). SMILES
are parsed as chemprop and OGB parse them (`Chem.MolFromSmiles`, hydrogens removed). Host NumPy
(the `chem` extra).
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from rdkit import Chem, rdBase

from gnkit.batching import pad_with_graphs
from gnkit.chem.features import (
    check_feature_set,
    feature_widths,
    molecule_arrays,
    rdkit_descriptors,
)
from gnkit.graph import GraphsTuple

_PACKAGE_DIR = Path(__file__).resolve().parents[1]
_CACHE_VERSION = 2


class InvalidSmilesError(ValueError):
    """A SMILES string RDKit rejects (or one without atoms); the message names its row and gives
    RDKit's reason."""


def _row_prefix(row: int | None) -> str:
    return "" if row is None else f"row {row}: "


def _check_smiles_type(smiles, row: int | None = None) -> None:
    """Raises `TypeError` naming `row` unless `smiles` is a `str`. Host."""
    if not isinstance(smiles, str):
        raise TypeError(
            f"{_row_prefix(row)}smiles must be a str, got {type(smiles).__name__} ({smiles!r})"
        )


_LOG_PREFIX = re.compile(r"^\[\d\d:\d\d:\d\d\] (SMILES Parse Error: )?")


def _parse_error_lines(log: str, smiles: str) -> list[str]:
    """RDKit's parse-error log without timestamps, the echoed string, its `~~^` marker and the
    closing `Failed parsing` line."""
    lines = []
    for line in log.splitlines():
        line = _LOG_PREFIX.sub("", line).rstrip(":").strip()
        echo = line == smiles or set(line) <= set("~^ ")
        if line and not echo and not line.startswith("Failed parsing SMILES"):
            lines.append(line)
    return lines


def _rejection_reason(smiles: str) -> str:
    """Why `Chem.MolFromSmiles(smiles)` returned None, in RDKit's words: its sanitisation error
    (valence, kekulisation, ...) or, where RDKit can capture its log (2026.03 and later), its
    parse error."""
    capture = getattr(rdBase, "CaptureErrorLog", None)
    with rdBase.BlockLogs():
        if capture is None:
            unsanitised, log = Chem.MolFromSmiles(smiles, sanitize=False), ""
        else:
            with capture() as captured:
                unsanitised = Chem.MolFromSmiles(smiles, sanitize=False)
            log = captured.messages
        if unsanitised is not None:
            try:
                Chem.SanitizeMol(unsanitised)
            except Chem.MolSanitizeException as error:
                return f"RDKit: {error}"
    lines = _parse_error_lines(log, smiles) if unsanitised is None else []
    return "RDKit cannot parse it" + (": " + "; ".join(lines) if lines else "")


def parse_smiles(smiles: str, row: int | None = None) -> Chem.Mol:
    """The RDKit molecule of `smiles`, parsed as `Chem.MolFromSmiles(smiles)` parses it.

    Raises `TypeError` when `smiles` is not a `str`, and `InvalidSmilesError` when RDKit
    rejects it (the message gives RDKit's reason: a valence or kekulisation error, or the parse
    error) or it has no atoms; both messages name `row` when given. Host.
    """
    _check_smiles_type(smiles, row)
    with rdBase.BlockLogs():
        molecule = Chem.MolFromSmiles(smiles)
    if molecule is None or molecule.GetNumAtoms() == 0:
        why = _rejection_reason(smiles) if molecule is None else "it has no atoms"
        raise InvalidSmilesError(f"{_row_prefix(row)}invalid SMILES {smiles!r} ({why})")
    return molecule


def _globals(molecule: Chem.Mol, descriptors: bool) -> np.ndarray:
    return rdkit_descriptors(molecule)[None] if descriptors else np.zeros((1, 1), np.float32)


def smiles_to_graph(smiles: str, features: str = "chemprop", descriptors: bool = False):
    """One molecule as a `GraphsTuple` of one graph: nodes `[N, F]`, edges `[2B, Fe]` (feature
    set `features`, `"chemprop"` or `"ogb"`), senders / receivers `[2B]`, globals `[1, 1]`
    zeros (or `[1, D]` RDKit descriptors with `descriptors`), `n_node` `[1]`, `n_edge` `[1]`.
    Raises `TypeError` when `smiles` is not a `str` and `InvalidSmilesError`, with RDKit's
    reason, for a string RDKit rejects. Host.
    """
    molecule = parse_smiles(smiles)
    arrays = molecule_arrays(molecule, features)
    return GraphsTuple(
        nodes=arrays["nodes"],
        edges=arrays["edges"],
        receivers=arrays["receivers"],
        senders=arrays["senders"],
        globals=_globals(molecule, descriptors),
        n_node=np.asarray([len(arrays["nodes"])], np.int32),
        n_edge=np.asarray([len(arrays["edges"])], np.int32),
    )


@dataclasses.dataclass(frozen=True)
class MoleculeGraphs:
    """A data set of molecule graphs stored as concatenated arrays (host NumPy).

    `nodes` `[sum N, F]`, `edges` `[sum E, Fe]`, `senders` / `receivers` `[sum E]` (indices
    within each molecule), `globals` `[M, 1]` zeros or `[M, D]` RDKit descriptors, `n_node` /
    `n_edge` `[M]` for the `M` molecules kept, `rows` `[M]` the input row of each (skipped rows
    are absent), `skipped` the `(row, smiles)` left out.
    """

    features: str
    nodes: np.ndarray
    edges: np.ndarray
    senders: np.ndarray
    receivers: np.ndarray
    globals: np.ndarray
    n_node: np.ndarray
    n_edge: np.ndarray
    rows: np.ndarray
    skipped: tuple[tuple[int, str], ...] = ()

    def __len__(self) -> int:
        return len(self.n_node)

    @property
    def node_offsets(self) -> np.ndarray:
        """`[M + 1]` first node row of each molecule, then the total."""
        return np.concatenate([[0], np.cumsum(self.n_node)])

    @property
    def edge_offsets(self) -> np.ndarray:
        """`[M + 1]` first edge row of each molecule, then the total."""
        return np.concatenate([[0], np.cumsum(self.n_edge)])

    def batch(self, molecules: Sequence[int]) -> GraphsTuple:
        """The molecules at positions `molecules` (not input rows) as one unpadded batch."""
        molecules = np.asarray(molecules, np.int64)
        node_offsets, edge_offsets = self.node_offsets, self.edge_offsets
        node_rows = _ranges(node_offsets[molecules], self.n_node[molecules])
        edge_rows = _ranges(edge_offsets[molecules], self.n_edge[molecules])
        n_node, n_edge = self.n_node[molecules], self.n_edge[molecules]
        shift = np.repeat(np.cumsum(n_node) - n_node, n_edge)
        return GraphsTuple(
            nodes=self.nodes[node_rows],
            edges=self.edges[edge_rows],
            receivers=(self.receivers[edge_rows] + shift).astype(np.int32),
            senders=(self.senders[edge_rows] + shift).astype(np.int32),
            globals=self.globals[molecules],
            n_node=n_node.astype(np.int32),
            n_edge=n_edge.astype(np.int32),
        )

    def padded_batch(self, molecules: Sequence[int], n_node: int, n_edge: int, n_graph: int):
        """`batch(molecules)` padded with jraph's trailing padding graph(s) to `n_node` nodes,
        `n_edge` edges (even, so that `e ^ 1` stays each edge's reverse) and `n_graph` graphs."""
        if n_edge % 2:
            raise ValueError(f"n_edge must be even (edges come in reverse pairs), got {n_edge}")
        return pad_with_graphs(self.batch(molecules), n_node, n_edge, n_graph)


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The concatenation of `range(start, start + length)` for each pair."""
    heads = np.cumsum(lengths) - lengths
    return np.arange(int(lengths.sum())) - np.repeat(heads - starts, lengths)


def _cache_file(cache_dir: Path, smiles: Sequence[str], settings: str) -> Path:
    digest = hashlib.sha256("\n".join(smiles).encode()).hexdigest()[:16]
    return cache_dir / f"molecules_{settings}_v{_CACHE_VERSION}_{digest}.npz"


def molecule_graphs(
    smiles: Sequence[str],
    features: str = "chemprop",
    *,
    on_invalid: str = "raise",
    descriptors: bool = False,
    cache_dir: str | Path | None = None,
    progress: bool = False,
) -> MoleculeGraphs:
    """Featurise every SMILES string of a data set into one `MoleculeGraphs`. Host.

    Args:
        smiles: the strings, one per data row (row `i` is `smiles[i]`); a row that is not a
            `str` raises `TypeError` naming it, whatever `on_invalid` says.
        features: `"chemprop"` (chemprop v2's default vectors) or `"ogb"` (OGB's integers).
        on_invalid: `"raise"` raises `InvalidSmilesError` naming the first bad row, its string
            and RDKit's reason; `"skip"` leaves bad rows out and lists them in `skipped` (`rows`
            maps back).
        descriptors: store each molecule's RDKit 2-D descriptors as its global row.
        cache_dir: where to keep the converted arrays (a file named by the feature set and a hash
            of the strings), reused on the next call with the same strings; None keeps nothing.
            A directory inside the gnkit package is refused.
        progress: show a progress bar while converting.

    Returns:
        The `MoleculeGraphs` of the valid molecules, in input order.
    """
    check_feature_set(features)
    if on_invalid not in ("raise", "skip"):
        raise ValueError(f"on_invalid must be 'raise' or 'skip', got {on_invalid!r}")
    smiles = list(smiles)
    for row, text in enumerate(smiles):
        _check_smiles_type(text, row)
    smiles = [str(text) for text in smiles]
    cache_path = None
    if cache_dir is not None:
        cache_dir = Path(cache_dir).resolve()
        if cache_dir == _PACKAGE_DIR or _PACKAGE_DIR in cache_dir.parents:
            raise ValueError(f"cache_dir {cache_dir} is inside the gnkit package; choose another")
        settings = f"{features}_{on_invalid}" + ("_descriptors" if descriptors else "")
        cache_path = _cache_file(cache_dir, smiles, settings)
        if cache_path.exists():
            return _load(cache_path, features, smiles)
    rows, parts, skipped, global_rows = [], [], [], []
    items = enumerate(smiles)
    if progress:
        from gnkit.progress import track

        items = track(items, len(smiles), f"featurising {len(smiles)} molecules", "molecule")
    for row, text in items:
        try:
            molecule = parse_smiles(text, row)
        except InvalidSmilesError:
            if on_invalid == "raise":
                raise
            skipped.append((row, text))
            continue
        rows.append(row)
        parts.append(molecule_arrays(molecule, features))
        global_rows.append(_globals(molecule, descriptors))
    width = len(global_rows[0][0]) if global_rows else 1
    graphs = _concatenate(
        parts, rows, skipped, features, np.concatenate(global_rows or [np.zeros((0, width))])
    )
    if cache_path is not None:
        cache_path.parent.mkdir(parents=True, exist_ok=True)
        temporary = cache_path.with_suffix(".partial.npz")
        np.savez_compressed(temporary, **_to_arrays(graphs))
        temporary.replace(cache_path)
    return graphs


def _concatenate(parts, rows, skipped, features, global_rows) -> MoleculeGraphs:
    atom_width, bond_width = feature_widths(features)
    dtype = np.int64 if features == "ogb" else np.float32

    def joined(key, width):
        arrays = [part[key] for part in parts]
        if not arrays:
            return np.zeros((0, width) if width else (0,), dtype if width else np.int32)
        return np.concatenate(arrays)

    return MoleculeGraphs(
        features=features,
        nodes=joined("nodes", atom_width),
        edges=joined("edges", bond_width).reshape(-1, bond_width).astype(dtype),
        senders=joined("senders", 0).astype(np.int32),
        receivers=joined("receivers", 0).astype(np.int32),
        globals=global_rows,
        n_node=np.asarray([len(part["nodes"]) for part in parts], np.int32),
        n_edge=np.asarray([len(part["edges"]) for part in parts], np.int32),
        rows=np.asarray(rows, np.int64),
        skipped=tuple(skipped),
    )


def _to_arrays(graphs: MoleculeGraphs) -> dict[str, np.ndarray]:
    arrays = {
        field.name: getattr(graphs, field.name)
        for field in dataclasses.fields(graphs)
        if field.name not in ("features", "skipped")
    }
    arrays["skipped_rows"] = np.asarray([row for row, _ in graphs.skipped], np.int64)
    return arrays


def _load(path: Path, features: str, smiles: list[str]) -> MoleculeGraphs:
    with np.load(path) as stored:
        arrays = {key: stored[key] for key in stored.files}
    skipped_rows = arrays.pop("skipped_rows")
    skipped = tuple((int(row), smiles[row]) for row in skipped_rows)
    return MoleculeGraphs(features=features, skipped=skipped, **arrays)
