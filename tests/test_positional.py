"""`gnkit.laplacian_pe`, `gnkit.random_walk_pe` and `gnkit.random_sign_flip` against PyTorch
Geometric's `AddLaplacianEigenvectorPE` / `AddRandomWalkPE` (graph by graph) and networkx's
normalised Laplacian, on a padded batch of molecule-like graphs."""

import networkx as nx
import numpy as np
import pytest

import gnkit as gn

torch = pytest.importorskip("torch")
transforms = pytest.importorskip("torch_geometric.transforms")
pyg_data = pytest.importorskip("torch_geometric.data")


def undirected(edges):
    edges = np.asarray(edges)
    return np.concatenate([edges, edges[:, ::-1]])


# Molecule-like graphs, each an edge list with both directions: a benzene-like ring with a
# two-atom tail, a branched chain, a fused pair of rings; and for the random walk two directed
# oddities (a duplicated edge, a self-edge, a sink and an isolated node).
RING_WITH_TAIL = undirected([(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (5, 0), (2, 6), (6, 7)])
BRANCHED = undirected([(0, 1), (1, 2), (1, 3), (3, 4), (4, 5), (4, 6), (6, 7), (7, 8)])
FUSED = undirected([(0, 1), (1, 2), (2, 3), (3, 4), (4, 0), (3, 5), (5, 6), (6, 7), (7, 2)])
DIRECTED = np.array([(0, 1), (0, 1), (1, 2), (2, 2), (2, 0), (3, 1), (1, 4)])
GRAPHS = [(RING_WITH_TAIL, 8), (BRANCHED, 9), (FUSED, 8)]


def make_batch(graphs, pad=True):
    """A batch of `(edge list, n_node)` graphs, padded to two extra graphs when `pad`."""
    single = [
        gn.GraphsTuple(
            nodes=np.zeros((n, 1)),
            edges=np.zeros((len(edges), 1)),
            senders=edges[:, 0],
            receivers=edges[:, 1],
            globals=None,
            n_node=np.array([n]),
            n_edge=np.array([len(edges)]),
        )
        for edges, n in graphs
    ]
    batch = gn.batch_np(single)
    if pad:
        batch = gn.pad_with_graphs(batch, int(batch.n_node.sum()) + 5, len(batch.senders) + 3, 5)
    return batch


def graph_rows(graphs):
    """The node rows of each graph in the batch."""
    offsets = np.cumsum([0] + [n for _, n in graphs])
    return [slice(offsets[i], offsets[i + 1]) for i in range(len(graphs))]


def pyg_encoding(transform, edges, n):
    data = pyg_data.Data(edge_index=torch.from_numpy(edges.T.copy()), num_nodes=n)
    data = transform(data)
    name = "random_walk_pe" if hasattr(data, "random_walk_pe") else "laplacian_eigenvector_pe"
    return getattr(data, name).double().numpy()


@pytest.mark.parametrize("walk_length", [1, 6])
def test_random_walk_pe_matches_pyg_graph_by_graph(walk_length):
    graphs = GRAPHS + [(DIRECTED, 6)]
    batch = make_batch(graphs)
    encodings = gn.random_walk_pe(batch, walk_length)
    assert encodings.shape == (batch.nodes.shape[0], walk_length)
    for rows, (edges, n) in zip(graph_rows(graphs), graphs, strict=True):
        expected = pyg_encoding(transforms.AddRandomWalkPE(walk_length), edges, n)
        np.testing.assert_allclose(encodings[rows], expected, rtol=1e-5, atol=1e-7)
    # By hand on the directed graph: node 2 returns in one step through its self-edge
    # (probability 1/2: its out-edges are 2 -> 2 and 2 -> 0); node 4 is a sink, 5 isolated.
    rows = graph_rows(graphs)[3]
    np.testing.assert_allclose(encodings[rows][:, 0], [0.0, 0.0, 0.5, 0.0, 0.0, 0.0])


def test_random_walk_pe_of_a_ring_by_hand():
    """On a 4-cycle a walk returns after 2 steps with probability 1/2, never after 1 or 3."""
    ring = undirected([(0, 1), (1, 2), (2, 3), (3, 0)])
    encodings = gn.random_walk_pe(make_batch([(ring, 4)], pad=False), 4)
    np.testing.assert_allclose(encodings, np.tile([0.0, 0.5, 0.0, 0.5 * 0.5 + 0.5 * 0.5], (4, 1)))


def assert_equal_up_to_column_signs(actual, expected, atol=1e-10):
    signs = np.sign(np.sum(actual * expected, axis=0))
    assert np.all(signs != 0)
    np.testing.assert_allclose(actual * signs, expected, atol=atol)


def projector(vectors):
    """The orthogonal projector onto the span of `vectors`' columns (PyG's `eig` path need not
    return orthogonal vectors within a repeated eigenvalue)."""
    return vectors @ np.linalg.pinv(vectors)


def assert_same_eigenvectors(ours, theirs, laplacian, k, atol):
    """Columns `1..k` of the sorted eigendecomposition: equal up to sign where an eigenvalue is
    simple, the same projector where a repeated eigenvalue lies wholly inside the `k` columns,
    and eigenvectors of that eigenvalue where the `k`-th column cuts its eigenspace."""
    eigenvalues = np.sort(np.linalg.eigvalsh(laplacian))[1:]
    groups = np.split(np.arange(len(eigenvalues)), np.flatnonzero(np.diff(eigenvalues) > 1e-8) + 1)
    kinds = set()
    for group in groups:
        inside = group[group < k]
        if inside.size == 0:
            continue
        value = eigenvalues[group[0]]
        for encodings in (ours, theirs):
            np.testing.assert_allclose(
                laplacian @ encodings[:, inside], value * encodings[:, inside], atol=atol
            )
        if group.size == 1:
            assert_equal_up_to_column_signs(ours[:, inside], theirs[:, inside], atol)
            kinds.add("simple")
        elif inside.size == group.size:
            np.testing.assert_allclose(
                projector(ours[:, inside]), projector(theirs[:, inside]), atol=atol
            )
            kinds.add("repeated")
        else:
            kinds.add("cut")
    return kinds


@pytest.mark.parametrize("k", [1, 3, 6])
def test_laplacian_pe_matches_pyg_eigenvector_by_eigenvector(k):
    """Against PyG, and against networkx's normalised Laplacian. The ring with a tail has the
    eigenvalue 1 three times over (columns 3-5), so k = 6 holds it whole and k = 3 cuts it."""
    batch = make_batch(GRAPHS)
    encodings = gn.laplacian_pe(batch, k)
    kinds = set()
    for rows, (edges, n) in zip(graph_rows(GRAPHS), GRAPHS, strict=True):
        laplacian = nx.normalized_laplacian_matrix(
            nx.Graph([tuple(edge) for edge in edges]), nodelist=range(n)
        ).toarray()
        for undirected_hint in (False, True):
            transform = transforms.AddLaplacianEigenvectorPE(k, is_undirected=undirected_hint)
            expected = pyg_encoding(transform, edges, n)
            # PyG builds the Laplacian in float32, and decomposes it in float32.
            kinds |= assert_same_eigenvectors(encodings[rows], expected, laplacian, k, 1e-6)
    assert "simple" in kinds
    assert ("cut" if k == 3 else "repeated" if k == 6 else "simple") in kinds


def test_laplacian_pe_spans_pygs_eigenspaces_where_eigenvalues_repeat():
    """A 6-cycle's normalised Laplacian has eigenvalues 0, 1/2, 1/2, 3/2, 3/2, 2: with k = 4
    both repeated pairs are whole, so the projectors onto the spans agree."""
    cycle = undirected([(i, (i + 1) % 6) for i in range(6)])
    encodings = gn.laplacian_pe(make_batch([(cycle, 6)]), 4)[:6]
    expected = pyg_encoding(transforms.AddLaplacianEigenvectorPE(4, is_undirected=True), cycle, 6)
    for columns in (slice(0, 2), slice(2, 4)):
        ours, theirs = encodings[:, columns], expected[:, columns]
        np.testing.assert_allclose(projector(ours), projector(theirs), atol=1e-6)
    np.testing.assert_allclose(encodings.T @ encodings, np.eye(4), atol=1e-10)


def test_laplacian_pe_zero_pads_graphs_with_too_few_nodes():
    """A 3-node path has 2 non-trivial eigenvectors; with k = 4 the last 2 columns are zero.
    Its normalised Laplacian's eigenvalues are 0, 1, 2 with eigenvectors (1, 0, -1) / sqrt 2 and
    (1, -sqrt 2, 1) / 2."""
    path = undirected([(0, 1), (1, 2)])
    encodings = gn.laplacian_pe(make_batch([(path, 3), (path, 3)]), 4)
    expected = np.array([[1, 1 / 2], [0, -np.sqrt(2) / 2], [-1, 1 / 2]])
    expected[:, 0] /= np.sqrt(2)
    for rows in (slice(0, 3), slice(3, 6)):
        assert_equal_up_to_column_signs(encodings[rows, :2], expected)
        np.testing.assert_array_equal(encodings[rows, 2:], 0.0)


def test_laplacian_pe_normalizations_by_hand():
    """On the path 0 - 1 - 2: `D - A` has eigenvalues 0, 1, 3 with eigenvectors (1, 0, -1) and
    (1, -2, 1); `I - D^-1 A` has eigenvalues 0, 1, 2 with right eigenvectors (1, 0, -1) and
    (1, -1, 1)."""
    graph = make_batch([(undirected([(0, 1), (1, 2)]), 3)], pad=False)
    combinatorial = gn.laplacian_pe(graph, 2, normalization=None)
    assert_equal_up_to_column_signs(
        combinatorial, np.array([[1, 1], [0, -2], [-1, 1]]) / np.sqrt([2, 6])
    )
    random_walk = gn.laplacian_pe(graph, 2, normalization="rw")
    assert_equal_up_to_column_signs(
        random_walk, np.array([[1, 1], [0, -1], [-1, 1]]) / np.sqrt([2, 3])
    )


def test_random_sign_flip_flips_whole_columns_per_graph():
    batch = make_batch(GRAPHS, pad=False)
    encodings = gn.laplacian_pe(batch, 3)
    seen = set()
    for seed in range(8):
        flipped = gn.random_sign_flip(encodings, batch.n_node, np.random.default_rng(seed))
        for rows in graph_rows(GRAPHS):
            signs = np.sign(np.sum(flipped[rows] * encodings[rows], axis=0))
            np.testing.assert_allclose(flipped[rows], encodings[rows] * signs)
            seen.update(signs.tolist())
    assert seen == {-1.0, 1.0}


def test_bad_arguments_are_named():
    batch = make_batch(GRAPHS, pad=False)
    with pytest.raises(ValueError, match="k must be a positive int, got 0"):
        gn.laplacian_pe(batch, 0)
    with pytest.raises(ValueError, match="normalization must be one of"):
        gn.laplacian_pe(batch, 2, normalization="symmetric")
    with pytest.raises(ValueError, match="walk_length must be a positive int"):
        gn.random_walk_pe(batch, -1)
    with pytest.raises(ValueError, match="encodings must be"):
        gn.random_sign_flip(np.zeros((3, 2)), batch.n_node, np.random.default_rng(0))
    crossing = batch._replace(receivers=np.where(batch.receivers == 9, 0, batch.receivers))
    with pytest.raises(ValueError, match="graph 1 has an edge to a node of another graph"):
        gn.random_walk_pe(crossing, 2)
