"""Random CLEVR scenes, placed with the rules of CLEVR's renderer (without rendering).

A scene holds 3-10 objects, each with a random shape, colour, material and size from CLEVR's
`properties.json`, at a random (x, y) in [-3, 3]^2. An object is accepted when, against every
object placed before it, (1) the gap between the two (distance minus both radii) is at least
`MIN_DISTANCE` and (2) the offset along each of the four ground-plane directions is either <= 0
or >= `MARGIN`, so that every left / right / front / behind relation is clear; after
`MAX_RETRIES` failed tries for one object the whole scene starts again. A cube's radius is its
size divided by sqrt(2), and an object rests on the ground: `3d_coords = (x, y, radius)`.

The directions come from a camera looking at the origin from `CAMERA` (CLEVR's base camera),
moved by up to `CAMERA_JITTER` along each axis: `behind` is the camera's viewing direction on the
ground plane, `front` its opposite, `left` it turned 90 degrees anticlockwise, `right` the
opposite. Relationships are CLEVR's: object j is in direction d of object i when
`(coords_j - coords_i) . d > RELATION_EPSILON`.

Scenes are dicts in the format of CLEVR's released `scenes.json` (`objects` with `color`, `shape`,
`material`, `size`, `3d_coords`, `rotation`; `relationships`; `directions`; `image_index`;
`image_filename`; `split`). CLEVR's renderer also rejected scenes where an object was hidden
behind others in the image; nothing is rendered here, so no scene is rejected for that. Host.
"""

from __future__ import annotations

import math
import random
from typing import Any

from gnkit.tasks.clevr import vocab

MIN_OBJECTS, MAX_OBJECTS = 3, 10
MIN_DISTANCE = 0.25
MARGIN = 0.4
MAX_RETRIES = 50
CAMERA = (7.48, -6.51, 5.34)
CAMERA_JITTER = 0.5
RELATION_EPSILON = 0.2
EXTENT = 3.0


def camera_directions(camera_x: float, camera_y: float) -> dict[str, tuple[float, float, float]]:
    """Unit ground-plane vectors for `left`, `right`, `front`, `behind` (and `above` / `below`
    along z, as CLEVR records them) for a camera at `(camera_x, camera_y)` looking at the origin."""
    length = math.hypot(camera_x, camera_y)
    behind = (-camera_x / length, -camera_y / length)
    left = (-behind[1], behind[0])
    return {
        "behind": (behind[0], behind[1], 0.0),
        "front": (-behind[0], -behind[1], 0.0),
        "left": (left[0], left[1], 0.0),
        "right": (-left[0], -left[1], 0.0),
        "above": (0.0, 0.0, 1.0),
        "below": (0.0, 0.0, -1.0),
    }


def relationships(objects: list[dict[str, Any]], directions: dict) -> dict[str, list[list[int]]]:
    """For each of left / right / behind / front, the sorted indices of the objects in that
    direction of each object: `relationships[d][i]`."""
    related = {}
    for name in vocab.RELATIONS:
        dx, dy, dz = directions[name]
        related[name] = [
            [
                j
                for j, other in enumerate(objects)
                if j != i
                and (other["3d_coords"][0] - obj["3d_coords"][0]) * dx
                + (other["3d_coords"][1] - obj["3d_coords"][1]) * dy
                + (other["3d_coords"][2] - obj["3d_coords"][2]) * dz
                > RELATION_EPSILON
            ]
            for i, obj in enumerate(objects)
        ]
    return related


def _placement_ok(x, y, radius, placed, directions) -> bool:
    for other_x, other_y, other_radius in placed:
        dx, dy = x - other_x, y - other_y
        if math.hypot(dx, dy) - radius - other_radius < MIN_DISTANCE:
            return False
        for name in ("left", "right", "front", "behind"):
            offset = dx * directions[name][0] + dy * directions[name][1]
            if 0 < offset < MARGIN:
                return False
    return True


def _place_objects(rng: random.Random, num_objects: int, directions) -> list[dict[str, Any]]:
    sizes = vocab.properties()["sizes"]
    while True:
        placed, objects = [], []
        for _ in range(num_objects):
            size = rng.choice(list(sizes))
            radius = sizes[size]
            for _ in range(MAX_RETRIES):
                x, y = rng.uniform(-EXTENT, EXTENT), rng.uniform(-EXTENT, EXTENT)
                if _placement_ok(x, y, radius, placed, directions):
                    break
            else:
                break
            shape = rng.choice(vocab.values("shape"))
            color = rng.choice(vocab.values("color"))
            material = rng.choice(vocab.values("material"))
            if shape == "cube":
                radius /= math.sqrt(2)
            placed.append((x, y, radius))
            objects.append({
                "color": color,
                "shape": shape,
                "material": material,
                "size": size,
                "3d_coords": [x, y, radius],
                "rotation": 360.0 * rng.random(),
            })
        if len(objects) == num_objects:
            return objects


def random_scene(rng: random.Random, index: int = 0, split: str = "new") -> dict[str, Any]:
    """One scene dict (CLEVR's scene format) drawn with `rng`; `index` and `split` name it
    (`image_index`, `image_filename = CLEVR_<split>_<index:06d>.png`)."""
    camera_x = CAMERA[0] + rng.uniform(-CAMERA_JITTER, CAMERA_JITTER)
    camera_y = CAMERA[1] + rng.uniform(-CAMERA_JITTER, CAMERA_JITTER)
    directions = camera_directions(camera_x, camera_y)
    objects = _place_objects(rng, rng.randint(MIN_OBJECTS, MAX_OBJECTS), directions)
    return {
        "split": split,
        "image_index": index,
        "image_filename": f"CLEVR_{split}_{index:06d}.png",
        "objects": objects,
        "relationships": relationships(objects, directions),
        "directions": {name: list(vector) for name, vector in directions.items()},
    }
