"""Distribution names and requirement closures, for the import blocker and its tests."""

import importlib.metadata
import re

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def normalise(name: str) -> str:
    """A distribution name as pip compares them: `Torch_Geometric` -> `torch-geometric`."""
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_closure(packages) -> set[str]:
    """`packages` and every distribution they require, transitively (extras left out)."""
    seen, todo = set(), [normalise(name) for name in packages]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = importlib.metadata.distribution(name).requires or []
        except importlib.metadata.PackageNotFoundError:
            continue
        todo += [normalise(_NAME.match(r).group()) for r in requires if "extra ==" not in r]
    return seen
