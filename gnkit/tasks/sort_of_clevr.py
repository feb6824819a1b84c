"""Sort-of-CLEVR (Santoro et al., 2017): relational and non-relational questions about pictures.

An image is `IMAGE_SIZE` x `IMAGE_SIZE` RGB pixels on a white background with 6 objects, one of
each colour of `COLOR_NAMES`, each a square or a circle of half-width `OBJECT_SIZE` pixels, at
centres more than `MIN_GAP` pixels apart (no two objects touch). Every image has
`QUESTIONS_PER_KIND` non-relational and as many relational questions, each about the object of
one colour, `X`:

- non-relational: the shape of X (square / circle); is X on the left (yes / no); is X on the
  top (yes / no);
- relational: the shape of the object closest to X; the shape of the object farthest from X;
  how many objects have X's shape (1..6, X included).

A question is its colour, whether it is relational and its type (0..2 in the orders above);
`question_vectors` encodes it as in the paper: one-hot colour (6), one-hot relational flag (2),
one-hot type (3). Answers are the 10 words of `ANSWER_NAMES`. Scenes in which an object has two
nearest (or two farthest) objects at the same distance are drawn again, so every answer is
unambiguous. Rendering is NumPy. Host.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

IMAGE_SIZE = 75
OBJECT_SIZE = 5
MIN_GAP = 2 * OBJECT_SIZE * np.sqrt(2) + 1
NUM_OBJECTS = 6
QUESTIONS_PER_KIND = 10
QUESTIONS_PER_IMAGE = 2 * QUESTIONS_PER_KIND
COLOR_NAMES = ("red", "green", "blue", "orange", "gray", "yellow")
COLORS_RGB = np.array(
    [[255, 0, 0], [0, 160, 0], [0, 0, 255], [255, 156, 0], [128, 128, 128], [255, 230, 0]],
    np.uint8,
)
SHAPE_NAMES = ("square", "circle")
ANSWER_NAMES = ("yes", "no", "square", "circle", "1", "2", "3", "4", "5", "6")
NUM_ANSWERS = len(ANSWER_NAMES)
YES, NO, SQUARE = 0, 1, 2
COUNT_ONE = 4
NON_RELATIONAL_TYPES = ("shape", "left", "top")
RELATIONAL_TYPES = ("closest shape", "farthest shape", "count")
QUESTION_DIM = NUM_OBJECTS + 2 + 3


def sample_centers(rng: np.random.Generator, num_images: int) -> np.ndarray:
    """Integer pixel centres `(x, y)` of the 6 objects, int32 `[num_images, 6, 2]`. Host.

    Each object lies wholly inside the image, centres are more than `MIN_GAP` apart, and no object
    has two nearest or two farthest others at the same distance (scenes are drawn again until so).
    """
    low, high = OBJECT_SIZE, IMAGE_SIZE - OBJECT_SIZE
    centers = np.empty((num_images, NUM_OBJECTS, 2), np.int32)
    pending = np.arange(num_images)
    while pending.size:
        draw = rng.integers(low, high, size=(pending.size, NUM_OBJECTS, 2))
        squared = _squared_distances(draw)
        off_diagonal = ~np.eye(NUM_OBJECTS, dtype=bool)
        apart = np.all((squared > MIN_GAP**2) | ~off_diagonal, axis=(1, 2))
        masked_low = np.where(off_diagonal, squared, np.inf)
        masked_high = np.where(off_diagonal, squared, -1)
        nearest_unique = np.all(_unique_extreme(masked_low, np.min), axis=1)
        farthest_unique = np.all(_unique_extreme(masked_high, np.max), axis=1)
        accepted = apart & nearest_unique & farthest_unique
        centers[pending[accepted]] = draw[accepted]
        pending = pending[~accepted]
    return centers


def _squared_distances(centers: np.ndarray) -> np.ndarray:
    """`[..., 6, 6]` squared distances between the centres `[..., 6, 2]` (integers stay exact)."""
    centers = centers.astype(np.int64)
    return np.sum((centers[..., :, None, :] - centers[..., None, :, :]) ** 2, axis=-1)


def _unique_extreme(values: np.ndarray, extreme) -> np.ndarray:
    """Whether each row's extreme value (along the last axis) occurs exactly once."""
    return np.sum(values == extreme(values, axis=-1, keepdims=True), axis=-1) == 1


def render(centers: np.ndarray, shapes: np.ndarray) -> np.ndarray:
    """The images: uint8 `[I, 75, 75, 3]` from centres `[I, 6, 2]` and shapes `[I, 6]` (0 square,
    1 circle); object `k` has colour `k`. A pixel `(row y, column x)` belongs to a square if
    `|x - cx| <= 5` and `|y - cy| <= 5`, to a circle if `(x - cx)^2 + (y - cy)^2 <= 5^2 + 5` (a
    round disc of radius about 5.5, without single-pixel tips). Host."""
    num_images = centers.shape[0]
    images = np.full((num_images, IMAGE_SIZE, IMAGE_SIZE, 3), 255, np.uint8)
    grid = np.arange(IMAGE_SIZE)
    for k in range(NUM_OBJECTS):
        dx = grid[None, None, :] - centers[:, k, 0, None, None]
        dy = grid[None, :, None] - centers[:, k, 1, None, None]
        square = (np.abs(dx) <= OBJECT_SIZE) & (np.abs(dy) <= OBJECT_SIZE)
        circle = dx**2 + dy**2 <= OBJECT_SIZE**2 + OBJECT_SIZE
        inside = np.where(shapes[:, k, None, None] == 0, square, circle)
        images[inside] = COLORS_RGB[k]
    return images


def answers(
    centers: np.ndarray,
    shapes: np.ndarray,
    color: np.ndarray,
    relational: np.ndarray,
    kind: np.ndarray,
) -> np.ndarray:
    """The answer index of each question of each image. Host.

    Args:
      centers: `[I, 6, 2]`, the objects' centres in pixels.
      shapes: int `[I, 6]`, the objects' shapes (0 square, 1 circle).
      color: int `[I, Q]`, the colour (object) each question is about, 0..5.
      relational: bool `[I, Q]`, whether it is a relational question.
      kind: int `[I, Q]`, its type within its group (see `NON_RELATIONAL_TYPES` and
        `RELATIONAL_TYPES`), 0..2.

    Returns:
      int32 `[I, Q]` indices into `ANSWER_NAMES`.
    """
    rows = np.arange(centers.shape[0])[:, None]
    own = centers[rows, color]
    own_shape = shapes[rows, color]
    squared = _squared_distances(centers)[rows, color]
    others = np.where(np.arange(NUM_OBJECTS) == color[..., None], np.inf, squared)
    closest = np.argmin(others, axis=-1)
    farthest = np.argmax(np.where(np.isinf(others), -1, others), axis=-1)
    same_shape = np.sum(shapes[:, None, :] == own_shape[..., None], axis=-1)
    center = IMAGE_SIZE / 2
    non_relational = np.select(
        [kind == 0, kind == 1],
        [SQUARE + own_shape, np.where(own[..., 0] < center, YES, NO)],
        np.where(own[..., 1] < center, YES, NO),
    )
    relational_answer = np.select(
        [kind == 0, kind == 1],
        [SQUARE + shapes[rows, closest], SQUARE + shapes[rows, farthest]],
        COUNT_ONE + same_shape - 1,
    )
    return np.where(relational, relational_answer, non_relational).astype(np.int32)


def question_vectors(color: np.ndarray, relational: np.ndarray, kind: np.ndarray) -> np.ndarray:
    """`[one-hot colour (6), one-hot (non-relational, relational) (2), one-hot type (3)]`: float32
    `[..., 11]` from integer arrays of one shape. Host."""
    return np.concatenate(
        [
            np.eye(NUM_OBJECTS, dtype=np.float32)[color],
            np.eye(2, dtype=np.float32)[np.asarray(relational, np.int64)],
            np.eye(3, dtype=np.float32)[kind],
        ],
        axis=-1,
    )


def generate(rng: np.random.Generator, num_images: int) -> dict[str, np.ndarray]:
    """`num_images` images with their objects and 20 questions each. Host.

    Returns `images` uint8 `[I, 75, 75, 3]`, `centers` int32 `[I, 6, 2]` (x, y in pixels),
    `shapes` int8 `[I, 6]` (0 square, 1 circle; object `k` has colour `k`), and per question
    `[I, 20]`: `color` (int8), `relational` (bool: the last 10 of each image), `kind` (int8,
    0..2) and `answer` (int32). Colours and types are drawn uniformly, independently.
    """
    centers = sample_centers(rng, num_images)
    shapes = rng.integers(0, 2, size=(num_images, NUM_OBJECTS)).astype(np.int8)
    shape = (num_images, QUESTIONS_PER_IMAGE)
    color = rng.integers(0, NUM_OBJECTS, size=shape).astype(np.int8)
    kind = rng.integers(0, 3, size=shape).astype(np.int8)
    relational = np.broadcast_to(np.arange(QUESTIONS_PER_IMAGE) >= QUESTIONS_PER_KIND, shape).copy()
    return {
        "images": render(centers, shapes),
        "centers": centers,
        "shapes": shapes,
        "color": color,
        "relational": relational,
        "kind": kind,
        "answer": answers(centers, shapes, color, relational, kind),
    }


def load_or_generate(path: str | Path, seed: int, num_images: int) -> dict[str, np.ndarray]:
    """The data set `generate(np.random.default_rng(seed), num_images)`, read from the `.npz`
    cache at `path` if it holds that data set, else generated and saved there. Host."""
    path = Path(path)
    if path.exists():
        with np.load(path) as saved:
            data = {key: saved[key] for key in saved.files}
        if int(data.pop("seed", -1)) == seed and len(data.get("images", ())) == num_images:
            return data
    data = generate(np.random.default_rng(seed), num_images)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.stem}.tmp.npz")
    np.savez_compressed(temporary, seed=seed, **data)
    temporary.replace(path)
    return data


def describe_question(color: int, relational: bool, kind: int) -> str:
    """The question in words, e.g. `"shape of the object farthest from red?"`."""
    name = COLOR_NAMES[color]
    if relational:
        texts = (
            f"shape of the object closest to {name}?",
            f"shape of the object farthest from {name}?",
            f"how many objects have {name}'s shape?",
        )
    else:
        texts = (f"shape of {name}?", f"is {name} on the left?", f"is {name} on the top?")
    return texts[kind]


def against_the_majority(
    shapes: np.ndarray,
    color: np.ndarray,
    relational: np.ndarray,
    kind: np.ndarray,
    answer: np.ndarray,
) -> np.ndarray:
    """Which questions ask for the shape of the object closest to or farthest from X and have
    as answer the shape held by fewer of the 5 objects other than X. Answering the others'
    majority shape, which X's shape and the scene's shape counts give without locating any other
    object, gets exactly these questions wrong. Host.

    Args:
      shapes: int `[I, 6]`, the objects' shapes (0 square, 1 circle).
      color: int `[I, Q]`, the colour (object) each question is about, 0..5.
      relational: bool `[I, Q]`, whether it is a relational question.
      kind: int `[I, Q]`, its type within its group (see `NON_RELATIONAL_TYPES` and
        `RELATIONAL_TYPES`), 0..2.
      answer: int `[I, Q]`, the true answers (`answers`).

    Returns:
      bool `[I, Q]`.
    """
    rows = np.arange(shapes.shape[0])[:, None]
    squares = np.sum(shapes == 0, axis=-1)[:, None] - (shapes[rows, color] == 0)
    majority = np.where(squares >= 3, SQUARE, SQUARE + 1)
    return np.asarray(relational, bool) & (kind < 2) & (answer != majority)


def accuracy_by_kind(correct: np.ndarray, relational: np.ndarray) -> dict[str, float]:
    """Mean of `correct` over the relational and the non-relational questions (same shapes)."""
    correct, relational = np.asarray(correct, bool), np.asarray(relational, bool)
    return {
        "relational": float(correct[relational].mean()),
        "non_relational": float(correct[~relational].mean()),
    }


def accuracy_by_type(correct: np.ndarray, relational: np.ndarray, kind: np.ndarray):
    """Mean of `correct` per question type, named as in `NON_RELATIONAL_TYPES` and
    `RELATIONAL_TYPES` (arrays of one shape; a type that does not occur is left out)."""
    correct, relational, kind = (np.asarray(a) for a in (correct, relational, kind))
    accuracy = {}
    for is_relational, names in ((False, NON_RELATIONAL_TYPES), (True, RELATIONAL_TYPES)):
        for index, name in enumerate(names):
            chosen = (relational == is_relational) & (kind == index)
            if chosen.any():
                accuracy[name] = float(correct[chosen].mean())
    return accuracy
