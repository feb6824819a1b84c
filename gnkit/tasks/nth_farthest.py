"""The N-th farthest task (Santoro et al., 2018): relational reasoning over a sequence.

A sequence shows `num_objects` vectors (default 8) of `num_features` dimensions (default 16),
one per step, each drawn uniformly from `[-1, 1]`. Each vector carries a label: the labels are a
random permutation of `0 .. num_objects - 1`. Two more numbers, the same at every step of a
sequence, pose the question: `n` and `m`, both in `0 .. num_objects - 1`. The answer is the label
of the vector that is the `n`-th farthest from the vector labelled `m`, in Euclidean distance,
counted from 0 in descending order: `n = 0` is the farthest vector, `n = num_objects - 1` the
vector labelled `m` itself (distance 0; the reference vector is one of the candidates, as in
Sonnet's dataset).

Each step's input is the concatenation, in this order, of the vector, its label one-hot, `n`
one-hot and `m` one-hot: `num_features + 3 * num_objects` numbers (40 by default). A model has
seen the whole question only at the last step; the paper's loss is the cross-entropy of the
final step's output against the target label.

Host-only (NumPy).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

NUM_OBJECTS = 8
NUM_FEATURES = 16


def input_size(num_objects: int = NUM_OBJECTS, num_features: int = NUM_FEATURES) -> int:
    """Numbers per step: vector, label one-hot, `n` one-hot, `m` one-hot."""
    return num_features + 3 * num_objects


def encode(
    vectors: np.ndarray, labels: np.ndarray, n: np.ndarray, m: np.ndarray
) -> np.ndarray:
    """The step inputs of sequences and their questions. Host.

    Args:
      vectors: `[B, K, F]`, each sequence's vectors.
      labels: int `[B, K]`, each vector's label, a permutation of `0 .. K-1` per row.
      n: int `[B]`, which farthest is asked for (`0` the farthest).
      m: int `[B]`, the label of the reference vector.

    Returns:
      float32 `[B, K, F + 3K]`: each step's vector, label one-hot and the `n`, `m` one-hots.
    """
    batch, num_objects, _ = vectors.shape
    eye = np.eye(num_objects, dtype=np.float32)
    question = np.concatenate([eye[n], eye[m]], axis=-1)[:, None, :]
    return np.concatenate(
        [
            np.asarray(vectors, np.float32),
            eye[labels],
            np.broadcast_to(question, (batch, num_objects, 2 * num_objects)),
        ],
        axis=-1,
    )


def answer(vectors: np.ndarray, labels: np.ndarray, n: np.ndarray, m: np.ndarray) -> np.ndarray:
    """The target labels: the `n`-th farthest vector from the vector labelled `m`. Host.

    Args:
      vectors: `[B, K, F]`, each sequence's vectors.
      labels: int `[B, K]`, each vector's label, a permutation of `0 .. K-1` per row.
      n: int `[B]`, which farthest is asked for (`0` the farthest).
      m: int `[B]`, the label of the reference vector.

    Returns:
      int32 `[B]`, the label of the `n`-th farthest vector from the one labelled `m`.
    """
    vectors = np.asarray(vectors, np.float64)
    rows = np.arange(vectors.shape[0])
    reference = vectors[rows, np.argmax(labels == m[:, None], axis=1)]
    distances = np.linalg.norm(vectors - reference[:, None, :], axis=-1)
    farthest_first = np.argsort(-distances, axis=1, kind="stable")
    return labels[rows, farthest_first[rows, n]].astype(np.int32)


def sample(
    rng: np.random.Generator,
    batch_size: int,
    num_objects: int = NUM_OBJECTS,
    num_features: int = NUM_FEATURES,
    n_choices: Sequence[int] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """A random batch of sequences and their answers (see the module docstring). Host.

    Args:
      rng: the NumPy generator to draw from.
      batch_size: `B`, sequences to draw.
      num_objects: `K`, vectors per sequence.
      num_features: `F`, numbers per vector (uniform in `[-1, 1]`).
      n_choices: the values `n` is drawn from (a curriculum's restricted questions); None: all of
        `0 .. K-1`.

    Returns:
      `(inputs [B, K, F + 3K] float32, targets [B] int32)`.
    """
    if batch_size < 1 or num_objects < 1 or num_features < 1:
        raise ValueError(
            "batch_size, num_objects and num_features must be >= 1, got "
            f"{batch_size}, {num_objects}, {num_features}"
        )
    if n_choices is not None and not (
        len(n_choices) and all(0 <= choice < num_objects for choice in n_choices)
    ):
        raise ValueError(f"n_choices must be values in 0 .. {num_objects - 1}, got {n_choices}")
    vectors = rng.uniform(-1.0, 1.0, size=(batch_size, num_objects, num_features))
    vectors = vectors.astype(np.float32)
    labels = np.argsort(rng.random((batch_size, num_objects)), axis=1)
    n = rng.integers(0, num_objects, size=batch_size)
    if n_choices is not None:
        n = np.asarray(n_choices)[rng.integers(0, len(n_choices), size=batch_size)]
    m = rng.integers(0, num_objects, size=batch_size)
    return encode(vectors, labels, n, m), answer(vectors, labels, n, m)


def held_out_set(
    seed: int, size: int, num_objects: int = NUM_OBJECTS, num_features: int = NUM_FEATURES
) -> tuple[np.ndarray, np.ndarray]:
    """A fixed held-out set of sequences. Host.

    Args:
      seed: seeds the generator; the same seed and sizes give the same set.
      size: sequences in the set.
      num_objects: `K`, vectors per sequence.
      num_features: `F`, numbers per vector.

    Returns:
      `(inputs [size, K, F + 3K] float32, targets [size] int32)`, as `sample`.
    """
    return sample(np.random.default_rng(seed), size, num_objects, num_features)
