"""Positional and structural node encodings for graph transformers (host NumPy).

`laplacian_pe` gives each node the eigenvectors of its graph's Laplacian (Dwivedi et al. 2020),
`random_walk_pe` the return probabilities of random walks (Dwivedi et al. 2022), both as PyTorch
Geometric's `AddLaplacianEigenvectorPE` and `AddRandomWalkPE` compute them, graph by graph in a
batch: a node's rows depend only on its own graph. The input may be batched and padded (a padding
graph is encoded as any other graph, so real rows are unchanged); the output has one row per node
of the input, in its order, ready to concatenate to the node features. Edges run from sender to
receiver; pass both directions for an undirected graph. These are host functions (data-dependent
shapes, a dense eigendecomposition of each graph): compute them once per data set, not in a step.
"""

from __future__ import annotations

import numpy as np

from gnkit.graph import GraphsTuple

LAPLACIAN_NORMALIZATIONS = ("sym", "rw", None)


def _graph_slices(graph: GraphsTuple, name: str):
    """Per graph: `(node offset, node count, senders, receivers)` with local node ids."""
    if graph.senders is None or graph.receivers is None or graph.n_node is None:
        raise ValueError(f"{name}: graph needs senders, receivers and n_node, got None.")
    senders, receivers = np.asarray(graph.senders), np.asarray(graph.receivers)
    n_node, n_edge = np.asarray(graph.n_node), np.asarray(graph.n_edge)
    if n_edge.sum() != senders.shape[0]:
        raise ValueError(
            f"{name}: sum(n_edge) = {n_edge.sum()} but the graph has {senders.shape[0]} edges."
        )
    node_offsets = np.concatenate([[0], np.cumsum(n_node)])
    edge_offsets = np.concatenate([[0], np.cumsum(n_edge)])
    for index, count in enumerate(n_node):
        first, last = edge_offsets[index], edge_offsets[index + 1]
        offset = node_offsets[index]
        local_senders = senders[first:last] - offset
        local_receivers = receivers[first:last] - offset
        if np.any((local_senders < 0) | (local_senders >= count)) or np.any(
            (local_receivers < 0) | (local_receivers >= count)
        ):
            raise ValueError(f"{name}: graph {index} has an edge to a node of another graph.")
        yield offset, int(count), local_senders, local_receivers


def _laplacian(count, senders, receivers, normalization):
    """PyG's `get_laplacian` as a dense `[n, n]` matrix, entry `[sender, receiver]`: self-edges
    removed, degrees counted over senders, duplicate edges summed."""
    keep = senders != receivers
    senders, receivers = senders[keep], receivers[keep]
    weights = np.ones(senders.shape[0])
    degree = np.bincount(senders, minlength=count).astype(np.float64)
    with np.errstate(divide="ignore"):
        if normalization is None:
            laplacian = np.diag(degree)
            np.add.at(laplacian, (senders, receivers), -weights)
            return laplacian
        if normalization == "sym":
            scale = np.where(degree > 0, degree**-0.5, 0.0)
            weights = scale[senders] * weights * scale[receivers]
        else:
            weights = np.where(degree > 0, 1.0 / degree, 0.0)[senders] * weights
    laplacian = np.eye(count)
    np.add.at(laplacian, (senders, receivers), -weights)
    return laplacian


def laplacian_pe(graph: GraphsTuple, k: int, normalization: str | None = "sym") -> np.ndarray:
    """The `k` Laplacian eigenvectors after the trivial one, per graph: `[n_node_total, k]`.

    For each graph, its Laplacian `L` (`"sym"`: `I - D^-1/2 A D^-1/2`, the default and what
    PyTorch Geometric's `AddLaplacianEigenvectorPE` uses; `"rw"`: `I - D^-1 A`; `None`:
    `D - A`; `A[i, j]` counts the edges `i -> j`, self-edges left out, `D` the out-degrees) is
    decomposed densely (`numpy.linalg.eigh` when `L` is symmetric, else `numpy.linalg.eig` and
    the real part, as PyG), the eigenvectors are sorted by eigenvalue, and columns `1..k` are
    kept. A graph with `n <= k` nodes has only `n - 1` such columns: the rest are zeros (PyG
    fails there). Each eigenvector's sign is arbitrary, and within a repeated eigenvalue so is
    the basis: train with `random_sign_flip`. Host NumPy, float64.

    Args:
        graph: a graph or a batch (padding graphs included); uses `senders`, `receivers`,
            `n_node`, `n_edge`.
        k: number of eigenvectors per node, >= 1.
        normalization: `"sym"`, `"rw"` or `None`, as PyG's `get_laplacian`.

    Returns:
        `[sum(n_node), k]` float64, row `i` for node `i` of `graph`.
    """
    if not isinstance(k, int | np.integer) or k < 1:
        raise ValueError(f"laplacian_pe: k must be a positive int, got {k!r}.")
    if normalization not in LAPLACIAN_NORMALIZATIONS:
        raise ValueError(
            f"laplacian_pe: normalization must be one of {LAPLACIAN_NORMALIZATIONS}, "
            f"got {normalization!r}."
        )
    encodings = np.zeros((int(np.sum(graph.n_node)), k))
    for offset, count, senders, receivers in _graph_slices(graph, "laplacian_pe"):
        if count < 2:
            continue
        laplacian = _laplacian(count, senders, receivers, normalization)
        if np.array_equal(laplacian, laplacian.T):
            values, vectors = np.linalg.eigh(laplacian)
        else:
            values, vectors = np.linalg.eig(laplacian)
        vectors = np.real(vectors[:, np.argsort(values)])[:, 1 : k + 1]
        encodings[offset : offset + count, : vectors.shape[1]] = vectors
    return encodings


def random_sign_flip(
    encodings: np.ndarray, n_node: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """Multiply each graph's eigenvector columns by random signs: `[N, k] -> [N, k]`.

    One sign per graph and column, +1 or -1 with equal probability, as PyG's
    `AddLaplacianEigenvectorPE` draws per graph; use it on `laplacian_pe`'s output each epoch
    so a model does not learn the arbitrary signs. `n_node` (`[n_graph]`) splits the rows into
    graphs. Host NumPy; `gnkit.nn.GPS` flips signs itself inside `jit` when training.
    """
    encodings = np.asarray(encodings)
    n_node = np.asarray(n_node)
    if encodings.ndim != 2 or n_node.sum() != encodings.shape[0]:
        raise ValueError(
            f"random_sign_flip: encodings must be [sum(n_node), k] = [{n_node.sum()}, k], "
            f"got shape {encodings.shape}."
        )
    signs = rng.choice(np.array([-1.0, 1.0]), size=(n_node.shape[0], encodings.shape[1]))
    return encodings * np.repeat(signs, n_node, axis=0)


def random_walk_pe(graph: GraphsTuple, walk_length: int) -> np.ndarray:
    """Random-walk return probabilities per node: `[n_node_total, walk_length]`.

    Column `t - 1` is `(P^t)[i, i]` for `P[i, j] = 1 / deg_out(i)` on every edge `i -> j`
    (an edge given twice counts twice in the degree but once in `P`, and self-edges stay, as
    PyTorch Geometric's `AddRandomWalkPE`; a node without out-edges has a zero row), for
    `t = 1..walk_length`, within each graph. Host NumPy, float64.
    """
    if not isinstance(walk_length, int | np.integer) or walk_length < 1:
        raise ValueError(
            f"random_walk_pe: walk_length must be a positive int, got {walk_length!r}."
        )
    encodings = np.zeros((int(np.sum(graph.n_node)), walk_length))
    for offset, count, senders, receivers in _graph_slices(graph, "random_walk_pe"):
        degree = np.maximum(np.bincount(senders, minlength=count), 1).astype(np.float64)
        transition = np.zeros((count, count))
        transition[senders, receivers] = 1.0 / degree[senders]
        power = transition
        for step in range(walk_length):
            if step:
                power = power @ transition
            encodings[offset : offset + count, step] = np.diagonal(power)
    return encodings
