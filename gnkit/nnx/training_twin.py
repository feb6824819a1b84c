"""The twin of a linen module with a training mode (dropout, batch statistics): NNX's
`model.train()` / `model.eval()` on top of `gnkit.nnx.twin.Twin`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flax import nnx

from gnkit.nnx.twin import Twin


class TrainingTwin(Twin):
    """A twin whose linen module has a training mode: dropout and batch statistics.

    NNX's convention holds the mode on the module: `deterministic` (no dropout) and, on a module
    with batch statistics, `use_running_average` (normalise by the running averages, leave them
    unchanged). Both start True, the linen module's default (evaluation); `model.train()` sets
    them False, `model.eval()` True, and `nnx.view(model, deterministic=..., ...)` gives a view
    with them set. The linen module has one training argument for both, so the two must agree.
    A module built with `rngs` keeps a dropout stream `rngs.dropout.fork()` (`rngs` attribute),
    as `nnx.Dropout` does; one taken over by `from_linen` needs `rngs=` at a training call.
    """

    def _build(
        self,
        linen_class: type,
        options: Mapping[str, Any],
        rngs: nnx.Rngs,
        sample: tuple,
        *,
        dropout: bool = False,
        **sample_arguments,
    ) -> None:
        """`Twin._build`, then keep a dropout stream from `rngs` when `dropout`."""
        super()._build(linen_class, options, rngs, sample, **sample_arguments)
        if dropout:
            self.rngs = rngs.dropout.fork()

    def _adopt(self, *args) -> None:
        super()._adopt(*args)
        self.rngs = nnx.data(None)
        self.deterministic = True
        if hasattr(self, "batch_stats"):
            self.use_running_average = True

    def set_view(
        self, deterministic: bool | None = None, use_running_average: bool | None = None
    ) -> None:
        """Set the mode, for `nnx.view`.

        Args:
          deterministic: False turns dropout on.
          use_running_average: False normalises by the batch's statistics and updates the
            running averages (only on a module with batch statistics).
        """
        if deterministic is not None:
            self.deterministic = deterministic
        if use_running_average is not None and hasattr(self, "batch_stats"):
            self.use_running_average = use_running_average

    def _training(self, deterministic: bool | None = None) -> bool:
        """Whether to run the linen module in training mode: `not deterministic` when given,
        else the module's mode."""
        if deterministic is not None:
            return not deterministic
        if hasattr(self, "batch_stats") and self.use_running_average != self.deterministic:
            raise ValueError(
                f"{type(self).__name__}: deterministic={self.deterministic} with "
                f"use_running_average={self.use_running_average}; the linen module switches "
                "dropout and batch statistics together, so set both (model.train(), "
                "model.eval())"
            )
        return not self.deterministic
