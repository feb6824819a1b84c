"""Pretty-CLEVR (Palm et al., 2018): questions that need 0..7 jumps of relational reasoning.

A scene holds 8 objects in the unit square, each with its own colour and its own marker (every
colour and every marker used once), at least `MIN_DISTANCE` apart (rejection sampling). From each
object, the greedy path jumps to the nearest object not yet visited, 7 times. A question names an
anchor object by its colour or by its marker and a number of jumps `n` (0..7); the answer is the
marker (anchor given by colour) or the colour (anchor given by marker) of the object the path
from the anchor reaches after `n` jumps. Each scene has 8 anchors x 8 jump counts x 2 anchor kinds
= 128 questions. Answers are 16 symbols: the colours 0..7, then the markers as 8..15.

The models see the state description (positions, colours, markers), not an image; `draw_scene`
draws a scene and a question's path with matplotlib for the pictures. Training augments the
positions with a random isotropic scale and rotation (`augment`), as the reference code does:
both keep every nearest-neighbour order, so the answers stay the same.

Everything here is host-side NumPy except `accuracy_by_jumps`, which also runs on device arrays.
"""

from __future__ import annotations

import numpy as np

NUM_OBJECTS = 8
NUM_JUMPS = NUM_OBJECTS  # questions ask for 0..7 jumps
NUM_ANSWERS = 16
QUESTIONS_PER_SCENE = NUM_OBJECTS * NUM_JUMPS * 2
MIN_DISTANCE = 0.1
COLOR_NAMES = ("blue", "green", "red", "cyan", "magenta", "yellow", "black", "gray")
MARKER_SYMBOLS = ("o", "v", "^", "<", ">", "s", "P", "X")


def sample_positions(
    rng: np.random.Generator, num_scenes: int, min_distance: float = MIN_DISTANCE
) -> np.ndarray:
    """Object positions uniform in the unit square, pairwise more than `min_distance` apart.

    Objects are placed one at a time; a candidate too close to an object already placed is drawn
    again. Returns float32 `[num_scenes, 8, 2]`. Host.
    """
    positions = np.empty((num_scenes, NUM_OBJECTS, 2))
    positions[:, 0] = rng.uniform(size=(num_scenes, 2))
    for placed in range(1, NUM_OBJECTS):
        pending = np.arange(num_scenes)
        while pending.size:
            candidates = rng.uniform(size=(pending.size, 2))
            gaps = np.linalg.norm(positions[pending, :placed] - candidates[:, None], axis=-1)
            accepted = gaps.min(axis=1) > min_distance
            positions[pending[accepted], placed] = candidates[accepted]
            pending = pending[~accepted]
    return positions.astype(np.float32)


def greedy_paths(positions: np.ndarray) -> np.ndarray:
    """For every start object, the objects the greedy nearest-unvisited path visits.

    `positions` `[S, 8, 2]`. Returns int `[S, 8, 8]`: `paths[s, a, n]` is the object reached from
    object `a` of scene `s` after `n` jumps (`paths[s, a, 0] == a`). Host.
    """
    positions = np.asarray(positions, np.float64)
    num_scenes = positions.shape[0]
    distances = np.linalg.norm(positions[:, :, None] - positions[:, None, :], axis=-1)
    scenes = np.arange(num_scenes)[:, None]
    starts = np.arange(NUM_OBJECTS)
    current = np.broadcast_to(starts, (num_scenes, NUM_OBJECTS)).copy()
    visited = np.broadcast_to(np.eye(NUM_OBJECTS, dtype=bool), distances.shape).copy()
    paths = np.empty((num_scenes, NUM_OBJECTS, NUM_OBJECTS), np.int64)
    paths[:, :, 0] = current
    for jump in range(1, NUM_OBJECTS):
        from_current = np.where(visited, np.inf, distances[scenes, current])
        current = from_current.argmin(axis=-1)
        visited[scenes, starts, current] = True
        paths[:, :, jump] = current
    return paths


def question_index(scene, start, jumps, anchor_is_color) -> np.ndarray:
    """Where `generate` puts the question about the path from object `start` of `scene` after
    `jumps` jumps, the anchor given by colour or by marker. Host.

    Args:
      scene: the scene's index.
      start: the start object's index within the scene (0..7).
      jumps: the number of jumps (0..7).
      anchor_is_color: true when the anchor is named by its colour, false by its marker.

    Returns:
      int64, broadcast over the arguments:
      `128 scene + 16 start + 2 jumps + (0 by colour, 1 by marker)`.
    """
    kind = 1 - np.asarray(anchor_is_color, np.int64)
    return (
        QUESTIONS_PER_SCENE * np.asarray(scene, np.int64)
        + 2 * NUM_JUMPS * np.asarray(start, np.int64)
        + 2 * np.asarray(jumps, np.int64)
        + kind
    )


def _question_layout() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Start object, jumps and anchor kind of a scene's 128 questions, each `[128]`, in the order
    of `question_index`."""
    start, jumps, by_color = np.meshgrid(
        np.arange(NUM_OBJECTS), np.arange(NUM_JUMPS), [True, False], indexing="ij"
    )
    return start.reshape(-1), jumps.reshape(-1), by_color.reshape(-1)


def generate(
    rng: np.random.Generator, num_scenes: int, min_distance: float = MIN_DISTANCE
) -> dict[str, np.ndarray]:
    """`num_scenes` scenes and their 128 questions each. Host.

    Returns NumPy arrays: `positions` float32 `[S, 8, 2]`, `colors` and `markers` int8 `[S, 8]`
    (a permutation of 0..7 each), and for the `Q = 128 S` questions `scene` int32 `[Q]`,
    `anchor_is_color` bool `[Q]`, `anchor` int8 `[Q]` (the anchor's colour or marker, 0..7),
    `jumps` int8 `[Q]` (0..7) and `answer` int8 `[Q]` (0..15: colours 0..7, markers 8..15).
    """
    positions = sample_positions(rng, num_scenes, min_distance)
    colors = rng.permuted(np.tile(np.arange(NUM_OBJECTS), (num_scenes, 1)), axis=1)
    markers = rng.permuted(np.tile(np.arange(NUM_OBJECTS), (num_scenes, 1)), axis=1)
    paths = greedy_paths(positions)
    start, jumps, by_color = _question_layout()
    scene = np.repeat(np.arange(num_scenes), QUESTIONS_PER_SCENE)
    start, jumps, by_color = (np.tile(x, num_scenes) for x in (start, jumps, by_color))
    target = paths[scene, start, jumps]
    anchor = np.where(by_color, colors[scene, start], markers[scene, start])
    answer = np.where(by_color, NUM_OBJECTS + markers[scene, target], colors[scene, target])
    return {
        "positions": positions,
        "colors": colors.astype(np.int8),
        "markers": markers.astype(np.int8),
        "scene": scene.astype(np.int32),
        "anchor_is_color": by_color,
        "anchor": anchor.astype(np.int8),
        "jumps": jumps.astype(np.int8),
        "answer": answer.astype(np.int8),
    }


def augment(rng: np.random.Generator, positions: np.ndarray) -> np.ndarray:
    """Each scene scaled by `2^u`, `u ~ U(-1, 1)`, and rotated by a uniform angle about the
    origin. `positions` `[S, 8, 2]`; returns float32 `[S, 8, 2]`. Distances scale alike within
    a scene, so every greedy path, hence every answer, is kept. Host."""
    num_scenes = positions.shape[0]
    scale = 2.0 ** rng.uniform(-1.0, 1.0, size=num_scenes)
    angle = rng.uniform(0.0, 2 * np.pi, size=num_scenes)
    cos, sin = np.cos(angle), np.sin(angle)
    rotation = np.stack([np.stack([cos, sin], -1), np.stack([-sin, cos], -1)], -2)
    transform = scale[:, None, None] * rotation  # [S, 2, 2], applied as positions @ transform
    return np.einsum("soi,sij->soj", positions, transform).astype(np.float32)


def describe_question(anchor_is_color: bool, anchor: int, jumps: int) -> str:
    """The question in words, e.g. `marker of the object 2 jumps from the red one?`. Host."""
    if anchor_is_color:
        return f"marker of the object {jumps} jumps from the {COLOR_NAMES[anchor]} one?"
    return f"colour of the object {jumps} jumps from the {MARKER_SYMBOLS[anchor]!r} one?"


def answer_name(answer: int) -> str:
    """An answer symbol (0..15) as a colour name or a quoted marker symbol. Host."""
    if answer < NUM_OBJECTS:
        return COLOR_NAMES[answer]
    return repr(MARKER_SYMBOLS[answer - NUM_OBJECTS])


def accuracy_by_jumps(correct, jumps) -> np.ndarray:
    """Mean of `correct` `[..., Q]` (bool) over the questions of each jump count, `[..., 8]`;
    NaN for a jump count without questions. `jumps` `[Q]`. Host (NumPy)."""
    correct = np.asarray(correct, np.float64)
    onehot = np.asarray(jumps)[:, None] == np.arange(NUM_JUMPS)
    counts = onehot.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (correct @ onehot) / counts


def draw_scene(ax, positions, colors, markers, path=None, size: float = 120.0) -> None:
    """Draw one scene: each object as its marker in its colour, and optionally a path of
    jumps. Host.

    Args:
      ax: the matplotlib axes to draw on.
      positions: `[8, 2]`, the objects' positions.
      colors: int `[8]`, each object's colour index.
      markers: int `[8]`, each object's marker index.
      path: object indices, e.g. `greedy_paths(...)[s, anchor, : n + 1]`: drawn as arrows from
        the anchor, which gets a ring; None draws no path.
      size: marker size, in points squared (the ring is four times that).

    Returns:
      None; draws on `ax`.
    """
    for (x, y), color, marker in zip(np.asarray(positions), colors, markers, strict=True):
        ax.scatter(x, y, c=COLOR_NAMES[color], marker=MARKER_SYMBOLS[marker], s=size, zorder=3)
    if path is not None and len(path):
        start = positions[path[0]]
        ax.scatter(*start, s=size * 4, facecolors="none", edgecolors="k", linewidths=1.2)
        for origin, target in zip(path[:-1], path[1:], strict=False):
            (x0, y0), (x1, y1) = positions[origin], positions[target]
            ax.annotate(
                "",
                xy=(x1, y1),
                xytext=(x0, y0),
                arrowprops={"arrowstyle": "->", "color": "0.35", "shrinkA": 7, "shrinkB": 7},
                zorder=2,
            )
    ax.margins(0.1)
    ax.set_aspect("equal")
    ax.set_xticks([])
    ax.set_yticks([])
