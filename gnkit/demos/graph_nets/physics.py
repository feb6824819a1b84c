"""Learn mass-spring physics with a graph network, after graph_nets' physics demo.

    python -m gnkit.demos.physics train                        # default config, then the report
    python -m gnkit.demos.physics eval --run-dir runs/physics  # re-evaluate a finished run

Chains of 5-8 masses joined by springs (ends fixed) at a random time of their motion; an
`EncodeProcessDecode` predicts every mass's velocity one step (0.1 s) later. The report rolls
the model out for 50 steps from 100 chains of 4 and of 9 masses (0.5 apart, as the demo) and
gives the mean squared position error against the simulator, plus the one-step velocity error;
`--run-dir` (default `runs/physics`) gets `train.json` / `eval.json`, `metrics.jsonl`,
checkpoints, `training.png` and `trajectories.png` (true vs predicted trajectories). Host driver.

graph_nets' physics demo uses one processing step (forces act between neighbours only), batches
of 256 systems and the same latent size, MLPs and optimiser as the other demos; so does the
default config here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from gnkit import experiments
from gnkit.batching import batch_np, get_node_padding_mask, pad_with_graphs
from gnkit.demos.graph_nets import config as common_config
from gnkit.demos.graph_nets import harness as common
from gnkit.demos.graph_nets import prediction
from gnkit.demos.graph_nets import report as common_report
from gnkit.graph import GraphsTuple
from gnkit.tasks import mass_spring

ROLLOUT_STEPS = 50
ROLLOUT_SPACING = 0.5

DEFAULT = common_config.DemoConfig(
    updates=6000,
    batch_size=256,
    steps=1,
    eval_steps=1,
    train_sizes=(5, 8),
    test_sizes=((4, 4), (9, 9)),
    eval_graphs=100,
    eval_batch_size=100,
    monitor_graphs=200,
    eval_every_updates=1000,
)
CONFIGS = {
    "default": DEFAULT,
    "quick": dataclasses.replace(DEFAULT, updates=1000, eval_every_updates=250),
    "tiny": common_config.tiny_config(
        4,
        batch_size=16,
        steps=1,
        eval_steps=1,
        eval_graphs=4,
        eval_batch_size=4,
        monitor_graphs=4,
    ),
}
PRESET_NOTES = {
    "default": "6,000 updates of 256 systems (4.2 CPU-minutes on 2 cores)",
    "quick": "a first look: 1,000 updates",
    "tiny": "a few updates on tiny systems, for tests",
}


def model_for(config: common_config.DemoConfig):
    """Two outputs per node: the next velocity."""
    return common.make_model(config, edge_output_size=None, node_output_size=2)


def _example() -> GraphsTuple:
    return mass_spring.chain_graph(3, 1.0)


def velocity_loss(outputs: list[GraphsTuple], targets: GraphsTuple) -> jax.Array:
    """Mean squared velocity error over real nodes and both axes, averaged over steps."""
    mask = get_node_padding_mask(targets)
    per_step = [
        common.masked_mean(jnp.mean((output.nodes - targets.nodes) ** 2, axis=-1), mask)
        for output in outputs
    ]
    return sum(per_step) / len(per_step)


def one_step_mse(config: common_config.DemoConfig, params, inputs, targets) -> float:
    """The task's `velocity_mse` of the model's next-velocity prediction on `inputs`.

    Args:
      config: the run's config.
      params: the model's parameters.
      inputs: the input graphs (positions and velocities).
      targets: their next-velocity targets.

    Returns:
      The mean squared velocity error.
    """
    predict = prediction.make_predict(model_for(config), config)
    nodes, _ = prediction.predict_graphs(predict, params, inputs, config.eval_batch_size)
    return mass_spring.metrics(nodes, batch_np(targets))["velocity_mse"]


def model_step(config: common_config.DemoConfig, params):
    """`graph -> next velocities [N, 2]` for `mass_spring.rollout` (one compile per shape)."""
    predict = prediction.make_predict(model_for(config), config)

    def step(graph: GraphsTuple) -> np.ndarray:
        n_node = len(graph.nodes)
        padded = pad_with_graphs(graph, n_node + 1, len(graph.senders), len(graph.n_node) + 1)
        return np.asarray(predict(params, padded).nodes)[:n_node]

    return step


def rollouts(config: common_config.DemoConfig, params, n_mass: int, index: int):
    """True and predicted trajectories `[T + 1, N, 5]` of `eval_graphs` chains of `n_mass`.

    Args:
      config: the run's config.
      params: the model's parameters.
      n_mass: masses per chain.
      index: which test set (its seed).

    Returns:
      `(true, predicted)` trajectories, each `[T + 1, N, 5]`.
    """
    rng = np.random.default_rng([config.seed, 1, index])
    systems = mass_spring.random_systems(
        rng, config.eval_graphs, n_mass, n_mass, ROLLOUT_SPACING, ROLLOUT_SPACING
    )
    graph = batch_np(systems)
    true = mass_spring.rollout(mass_spring.next_velocities, graph, ROLLOUT_STEPS)
    predicted = mass_spring.rollout(model_step(config, params), graph, ROLLOUT_STEPS)
    return true, predicted


def plot_trajectories(panels, path: Path | None) -> None:
    """Each mass's path in the plane for one chain per panel: true solid, predicted dashed."""
    if path is None:
        return
    plt = experiments.pyplot()
    figure, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 4), squeeze=False)
    for axis, (title, true, predicted) in zip(axes[0], panels, strict=True):
        colours = plt.cm.viridis(np.linspace(0, 1, true.shape[1]))
        for mass, colour in enumerate(colours):
            axis.plot(true[:, mass, 0], true[:, mass, 1], color=colour, lw=1.5)
            axis.plot(predicted[:, mass, 0], predicted[:, mass, 1], "--", color=colour, lw=1.5)
        axis.plot(true[0, :, 0], true[0, :, 1], "k.-", lw=0.8, label="start")
        axis.plot([], [], "k-", label="true")
        axis.plot([], [], "k--", label="predicted")
        axis.set(title=title, xlabel="x", ylabel="y")
        axis.legend(fontsize=8)
    figure.tight_layout()
    experiments.save_figure(figure, path)


def report(
    config: common_config.DemoConfig,
    params,
    run_dir: experiments.RunDir,
    options: experiments.Options,
    extra: dict,
) -> dict:
    """Roll out on every test chain length, plot, and return the results (with `extra`).

    Args:
      config: the run's config.
      params: the parameters reported on.
      run_dir: the run directory.
      options: the command's options.
      extra: entries added to the results (timings, the checkpoint used).

    Returns:
      The results dict.
    """
    watch = common_report.Stopwatch()
    results = {"demo": "physics", **extra, "rollout_steps": ROLLOUT_STEPS, "test": {}}
    panels = []
    for index, (n_mass, _) in enumerate(config.test_sizes):
        true, predicted = rollouts(config, params, n_mass, index)
        one_step = mass_spring.generate_graphs(
            np.random.default_rng([config.seed, 3, index]),
            config.eval_graphs,
            n_mass,
            n_mass,
            min_spacing=ROLLOUT_SPACING,
            max_spacing=ROLLOUT_SPACING,
        )
        results["test"][f"{n_mass} masses"] = {
            "rollout_position_mse": mass_spring.rollout_mse(predicted[1:], true[1:]),
            "one_step_velocity_mse": one_step_mse(config, params, *one_step),
        }
        title = f"{n_mass} masses, {ROLLOUT_STEPS} steps"
        panels.append((title, true[:, :n_mass], predicted[:, :n_mass]))
    results["eval_time"] = watch.read()
    plot_trajectories(panels, options.plot_path(run_dir, "trajectories.png"))
    common_report.plot_training(
        run_dir.metrics_path,
        options.plot_path(run_dir, "training.png", main=False),
        "velocity_mse",
        "one-step velocity MSE (monitored)",
    )
    common_report.print_summary(results)
    return results


def _generate(rng, n_graphs, min_masses, max_masses):
    return mass_spring.generate_graphs(rng, n_graphs, min_masses, max_masses, ROLLOUT_STEPS)


def train_verb(
    config: common_config.DemoConfig, run_dir: experiments.RunDir, options: experiments.Options
) -> dict:
    """The `train` verb: train `config` in `run_dir` (resuming), then roll out and plot with the
    best-validation checkpoint (lowest monitored one-step velocity MSE); returns the results."""
    watch = common_report.Stopwatch()
    low = config.train_sizes[0]
    policy = common.bucket_policy(config.batch_size, low, 2 * low - 4, config.bucket_growth)
    monitor_rng = np.random.default_rng([config.seed, 2])
    monitor = _generate(monitor_rng, config.monitor_graphs, *config.train_sizes)

    def monitor_eval(params):
        mse = one_step_mse(config, params, *monitor)
        return {"score": -mse, "velocity_mse": mse}

    model = model_for(config)
    common.run_training(
        config, model, _example(), velocity_loss, _generate, policy, monitor_eval, run_dir, options
    )
    loaded = common_report.load_report_checkpoint(model, _example(), config, run_dir.path)
    params, checkpoint = loaded
    extra = {"train_time": watch.read(), "checkpoint": checkpoint}
    return report(config, params, run_dir, options, extra)


def evaluate_verb(
    config: common_config.DemoConfig, run_dir: experiments.RunDir, options: experiments.Options
) -> dict:
    """The `eval` verb: roll out with the best-validation checkpoint of an earlier run."""
    params, checkpoint = common_report.load_report_checkpoint(
        model_for(config), _example(), config, run_dir.path
    )
    return report(config, params, run_dir, options, {"checkpoint": checkpoint})


DEMO = common.demo(
    "physics", __doc__.split("\n")[0], CONFIGS, train_verb, evaluate_verb, PRESET_NOTES
)


def train(config: common_config.DemoConfig, run_dir: str | Path, progress: bool = True) -> dict:
    """Train `config` in `run_dir` (resuming), then roll out and plot, as `gnkit physics train`;
    returns the results."""
    return experiments.run_verb(DEMO, "train", config, run_dir, progress=progress)


def main(argv: Sequence[str] | None = None) -> int:
    """`gnkit physics train|eval ...`; returns the exit status."""
    return experiments.run(DEMO, argv)

