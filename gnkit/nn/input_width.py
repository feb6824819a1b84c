"""The input-width check every `gnkit.nn` layer makes before it applies its parameters.

Linen infers a layer's input widths when it initialises the parameters; applied to a graph of
another width, Flax would stop inside a `Dense` with a `ScopeParamShapeError` that names a
kernel. `check_input_width` compares the width the parameters were built for (the first axis
of a kernel) with the one the layer receives and raises an `InputWidthError` that names the
layer and both widths. It reads static shapes only, so it works under `jit`; during `init`
there are no parameters yet and it checks nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

import flax.linen as nn
import numpy as np


class InputWidthError(ValueError):
    """A layer received inputs of another width than its parameters were built for.

    Attributes:
      module: the layer's class name.
      path: the layer's place in its root module (names; empty at the root).
      what: what was counted, e.g. `'node features'`.
      expected: the width the parameters were built for.
      found: the width received.
      argument: the NNX twin's constructor argument that sets the width, e.g. `'in_features'`.
      found_in: where the width was found: `'graph'` or `'input'`.
    """

    def __init__(self, module: str, path: Sequence[str], what: str, expected: int, found: int,
                 argument: str, found_in: str = "graph", name_argument: bool = False):
        self.module, self.path, self.what = module, tuple(path), what
        self.expected, self.found = expected, found
        self.argument, self.found_in = argument, found_in
        where = f" '{'/'.join(self.path)}'" if self.path else ""
        setting = f" ({argument}={expected})" if name_argument else ""
        super().__init__(f"{module}{where} was built for {expected} {what}{setting}; the "
                         f"{found_in} has {found}.")

    def naming_argument(self) -> InputWidthError:
        """The same error with the NNX constructor argument in its message (as a twin says it)."""
        return InputWidthError(self.module, self.path, self.what, self.expected, self.found,
                               self.argument, self.found_in, name_argument=True)


def built_width(module: nn.Module, kernel_path: Sequence[str], axis: int = 0) -> int | None:
    """Axis `axis` of the parameter at `kernel_path` in `module`'s `params` (the input axis of
    a kernel, `[F_in, ...]` by default), or None while it does not exist yet (during `init`)."""
    tree = module.variables.get("params", {})
    for name in kernel_path:
        if not hasattr(tree, "get") or name not in tree:
            return None
        tree = tree[name]
    return int(np.shape(tree)[axis])


def check_input_width(
    module: nn.Module,
    kernel_path: Sequence[str],
    found: int,
    *,
    what: str = "node features",
    argument: str = "in_features",
    found_in: str = "graph",
    offset: int = 0,
    rows_per_feature: int = 1,
    axis: int = 0,
) -> None:
    """Raise an `InputWidthError` unless `found` is the width `module` was built for.

    The expected width is axis `axis` (default the first) of the kernel at `kernel_path` (e.g.
    `('linear', 'kernel')`) minus `offset` (the kernel's rows for other inputs), divided by
    `rows_per_feature` (rows per input feature, for inputs widened on the way). Nothing is
    checked while the kernel does not exist (during `init`). Static shapes only: jittable.

    Args:
      module: the bound linen layer, inside its `__call__`.
      kernel_path: where the kernel sits in the layer's `params`.
      found: the width received.
      what: what is counted, for the message.
      argument: the NNX twin's constructor argument for this width, for the message.
      found_in: `'graph'` or `'input'`, for the message.
      offset: kernel rows that belong to other inputs.
      rows_per_feature: kernel rows per input feature.
      axis: the kernel's input axis (1 for a stack of kernels `[R, F_in, F_out]`).
    """
    rows = built_width(module, kernel_path, axis)
    if rows is None or rows - offset == found * rows_per_feature:
        return
    expected = (rows - offset) // rows_per_feature
    raise InputWidthError(type(module).__name__, module.path, what, expected, found, argument,
                          found_in)
