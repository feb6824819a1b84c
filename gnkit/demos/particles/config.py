"""The particles demo's typed config and its presets."""

from __future__ import annotations

import dataclasses
from typing import Literal

from gnkit.experiments import setting

ModelName = Literal["gns", "segnn"]


@dataclasses.dataclass(frozen=True)
class ParticlesConfig:
    """Data, model, training and evaluation of one run (`--set KEY=VALUE` sets a field).

    `case`: a shipped LagrangeBench-layout set (`gnkit.particles.particle_dataset_path`). The
    models are GNS (`gnkit.particles.gns.GNS`, residual interaction blocks with layer norm) and
    SEGNN (`gnkit.particles.segnn.SEGNN`, steerable layers of e3nn-jax irreps) on `history`
    normalised velocities per particle (LagrangeBench's `input_seq_length` 6 gives 5), plus
    RPF's body force; built with flax linen or their NNX twins (`api`). `latent_size`,
    `num_layers` and `steps` size both as LagrangeBench's `latent_dim`, `num_mlp_layers` and
    `num_mp_steps` do: for SEGNN `latent_size` is its `scalar_units` and `num_layers` its
    steerable layers per block. SEGNN reads velocities and accelerations normalised the same
    along every axis (`Normalisation.isotropic`, LagrangeBench's `isotropic_norm`), so its
    predictions rotate with the flow. Training draws
    `batch_size` windows per update (trajectory and frame uniform, seeded by `(seed,
    update)`), adds GNS's random-walk noise (`noise_std` at the last velocity) and fits the
    normalised acceleration (LagrangeBench's loss: squared error summed over dims, averaged
    over particles) with AdamW (weight decay 1e-8) on an exponential decay from
    `learning_rate` by `lr_decay_rate` every `lr_decay_steps` down to `lr_final`, as
    LagrangeBench's trainer. Every `eval_every_updates` updates: the one-step loss on up to
    `valid_windows` validation windows (no noise) and a `valid_rollout_steps` rollout of each
    validation trajectory, whose position MSE picks the state tested. The test rolls out every
    test trajectory in full (`test_rollout_steps` > 0: at most that many), with the neighbour
    list rebuilt every step at a fixed capacity (`capacity_growth` times the first frame's
    pairs; on overflow doubled up to `rollout_max_growth` times, else the rollout stops there
    and says so), and reports LagrangeBench's metrics.
    """

    case: Literal["tgv2d", "rpf2d"] = setting("tgv2d", help="the shipped dataset")
    model: tuple[ModelName, ...] = setting(("gns",), help="the models to train: gns, segnn")
    api: Literal["linen", "nnx"] = setting("linen", help="flax linen or its NNX twin")
    history: int = setting(5, minimum=1, help="input velocities per particle")
    latent_size: int = setting(128, minimum=1, help="width of every MLP and of the latents")
    num_layers: int = setting(2, minimum=1, help="hidden layers per MLP")
    steps: int = setting(10, minimum=1, help="message-passing steps")
    lmax_hidden: int = setting(1, minimum=0, help="SEGNN: highest degree of the hidden irreps")
    lmax_attributes: int = setting(1, minimum=0, help="SEGNN: highest degree of the attributes")
    noise_std: float = setting(3e-4, minimum=0.0, help="random-walk noise at the last velocity")
    batch_size: int = setting(1, minimum=1, help="windows per update")
    updates: int = setting(2000, minimum=1)
    learning_rate: float = setting(5e-4, minimum=0.0, help="the schedule's first value")
    lr_final: float = setting(1e-6, minimum=0.0, help="the schedule's floor")
    lr_decay_rate: float = setting(0.1, minimum=0.0, help="decay factor per lr_decay_steps")
    lr_decay_steps: int = setting(100_000, minimum=1)
    eval_every_updates: int = setting(250, minimum=1)
    valid_windows: int = setting(8, minimum=1, help="validation windows of the one-step loss")
    valid_rollout_steps: int = setting(20, minimum=1, help="validation rollout length")
    test_rollout_steps: int = setting(0, minimum=0, help="cap on test rollouts (0: full)")
    metrics_stride: int = setting(10, minimum=1, help="frame stride of e_kin and Sinkhorn")
    capacity_growth: float = setting(1.25, minimum=1.0, help="edge slots per pair counted")
    rollout_max_growth: float = setting(8.0, minimum=1.0, help="largest rollout capacity "
                                        "as a multiple of the first")
    bin_capacity: int = setting(8, minimum=1, help="particles per cell-list bin")
    gif_frames: int = setting(40, minimum=0, help="frames of the rollout GIF (0: none)")
    seed: int = 0

    def validate(self) -> None:
        if len(set(self.model)) != len(self.model) or not self.model:
            raise ValueError("model must name each model at most once")

    @property
    def models(self) -> tuple[str, ...]:
        """The runner's models: those of `model`, in order."""
        return tuple(self.model)


CONFIGS = {
    "default": ParticlesConfig(latent_size=64, steps=5, updates=6000, learning_rate=1e-3,
                               lr_decay_steps=3000, eval_every_updates=500),
    "quick": ParticlesConfig(latent_size=64, steps=4, updates=1500, learning_rate=1e-3,
                             lr_decay_steps=1000, eval_every_updates=250, valid_windows=4),
    "paper": ParticlesConfig(updates=500_000, eval_every_updates=10_000, metrics_stride=1),
    "tiny": ParticlesConfig(latent_size=8, num_layers=1, steps=1, updates=4,
                            eval_every_updates=2, valid_windows=2, valid_rollout_steps=3,
                            test_rollout_steps=3, metrics_stride=4, gif_frames=3),
}

PRESET_NOTES = {
    "default": "GNS latent 64, 5 message-passing steps, 6,000 updates of one window, lr 1e-3 "
    "decaying 10x every 3,000 (about 30 CPU-minutes here)",
    "quick": "a first look in a few CPU-minutes: GNS latent 64, 4 message-passing steps, "
    "1,500 updates, lr 1e-3 decaying 10x every 1,000 (SEGNN at these sizes: about 40 "
    "CPU-minutes)",
    "paper": "LagrangeBench's GNS recipe (latent 128, 10 message-passing steps, 2-layer MLPs, "
    "noise 3e-4, AdamW 5e-4 to 1e-6 decaying 10x every 1e5, 500,000 updates of batch 1; no "
    "pushforward; its SEGNN on TGV 2D: --set latent_size=64), for an accelerator",
    "tiny": "a GNS of 8 channels and one message-passing step for 4 updates, for tests",
}
