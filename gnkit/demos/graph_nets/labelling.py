"""The two labelling demos (sort, shortest path): node and edge classes, loss on every step.

Host driver around `gnkit.demos.graph_nets.harness`; the model, loss and train step are jitted.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping

import jax
import numpy as np
import optax

from gnkit import experiments
from gnkit.batching import batch_np, get_edge_padding_mask, get_node_padding_mask
from gnkit.demos.graph_nets.config import DemoConfig
from gnkit.demos.graph_nets.harness import (
    Generate,
    bucket_policy,
    demo,
    make_model,
    masked_mean,
    run_training,
)
from gnkit.demos.graph_nets.prediction import make_predict, predict_graphs
from gnkit.demos.graph_nets.report import (
    Stopwatch,
    load_report_checkpoint,
    plot_training,
    print_summary,
)
from gnkit.graph import GraphsTuple
from gnkit.nn.encode_process_decode import EncodeProcessDecode


def classification_loss(outputs: list[GraphsTuple], targets: GraphsTuple) -> jax.Array:
    """graph_nets' loss: node plus edge softmax cross-entropy, averaged over steps. Jittable.

    `outputs` are the per-step logits (nodes `[N, C]`, edges `[E, C]`), `targets` the padded
    one-hot targets; padding rows are masked out.
    """
    node_mask = get_node_padding_mask(targets)
    edge_mask = get_edge_padding_mask(targets)
    per_step = [
        masked_mean(optax.softmax_cross_entropy(output.nodes, targets.nodes), node_mask)
        + masked_mean(optax.softmax_cross_entropy(output.edges, targets.edges), edge_mask)
        for output in outputs
    ]
    return sum(per_step) / len(per_step)


@dataclasses.dataclass(frozen=True)
class ClassificationTask:
    """A node-and-edge labelling demo (sort, shortest path): what differs between them.

    Attributes:
      name: the demo's name (`sort`, `shortest_path`).
      generate: `(rng, n_graphs, min_size, max_size) -> (inputs, targets)`.
      metrics: the task's metrics function (it must report `solved`).
      example: `() -> graph`, a small input graph for initialisation.
      typical_edges: `size -> edges`, about how many edges a graph of `size` nodes has (it sets
        the bucket ladder's edges-to-nodes ratio).
      plot_example: `(axes, inputs, targets, node_logits, edge_logits, label) -> None`, draws
        one graph's target and the model's outputs for it into two matplotlib axes.
    """

    name: str
    generate: Generate
    metrics: Callable[..., dict[str, float]]
    example: Callable[[], GraphsTuple]
    typical_edges: Callable[[int], int]
    plot_example: Callable[..., None]


def classification_model(config: DemoConfig) -> EncodeProcessDecode:
    """Two classes per node and per edge."""
    return make_model(config, edge_output_size=2, node_output_size=2)


def held_out_set(task: ClassificationTask, config: DemoConfig, sizes: tuple[int, int], index: int):
    """The fixed `(inputs, targets)` test set number `index` of `eval_graphs` graphs.

    Args:
      task: the labelling task.
      config: the run's config (seed, `eval_graphs`).
      sizes: `(min, max)` graph size.
      index: which test set (its seed).

    Returns:
      `(inputs, targets)`, lists of graphs.
    """
    rng = np.random.default_rng([config.seed, 1, index])
    return task.generate(rng, config.eval_graphs, *sizes)


def evaluate_classification(task: ClassificationTask, config: DemoConfig, params, inputs, targets):
    """`task.metrics` at the last processing step over all of `inputs`, and the node and edge
    logits (`[N, 2]`, `[E, 2]`, all graphs in order). Host driver.

    Args:
      task: the labelling task.
      config: the run's config.
      params: the model's parameters.
      inputs: the input graphs.
      targets: their target graphs.

    Returns:
      `(metrics, node logits [N, 2], edge logits [E, 2])`.
    """
    predict = make_predict(classification_model(config), config)
    nodes, edges = predict_graphs(predict, params, inputs, config.eval_batch_size)
    target = batch_np(targets)
    return task.metrics(target._replace(nodes=nodes, edges=edges), target), nodes, edges


def report_classification(
    task: ClassificationTask,
    config: DemoConfig,
    params,
    run_dir: experiments.RunDir,
    options: experiments.Options,
    extra: dict,
) -> dict:
    """Evaluate on every `test_sizes` set, plot, and return the results (with `extra`).

    The main figure, `example.png`, shows the first graph of each test set, one row each;
    `training.png` the learning curve.

    Args:
      task: the labelling task.
      config: the run's config.
      params: the parameters reported on.
      run_dir: the run directory.
      options: the command's options.
      extra: entries added to the results (timings, the checkpoint used).

    Returns:
      The results dict.
    """
    watch = Stopwatch()
    results = {"demo": task.name, **extra, "test": {}}
    examples = []
    for index, (low, high) in enumerate(config.test_sizes):
        inputs, targets = held_out_set(task, config, (low, high), index)
        metrics, nodes, edges = evaluate_classification(task, config, params, inputs, targets)
        results["test"][f"{low}-{high}"] = metrics
        n_node, n_edge = len(inputs[0].nodes), len(inputs[0].senders)
        examples.append((inputs[0], targets[0], nodes[:n_node], edges[:n_edge], f"{low}-{high}"))
    results["eval_time"] = watch.read()
    plot_examples(task, examples, options.plot_path(run_dir, "example.png"))
    plot_training(
        run_dir.metrics_path,
        options.plot_path(run_dir, "training.png", main=False),
        "solved",
        f"solved ({config.monitor_graphs} graphs of training size)",
    )
    print_summary(results)
    return results


def plot_examples(task: ClassificationTask, examples: list[tuple], path) -> None:
    """One row per `(inputs, targets, node logits, edge logits, label)`, drawn by the task."""
    plt = experiments.pyplot()
    figure, axes = plt.subplots(
        len(examples), 2, figsize=(9, 4.4 * len(examples)), squeeze=False, constrained_layout=True
    )
    for row, example in zip(axes, examples, strict=True):
        task.plot_example(row, *example)
    experiments.save_figure(figure, path, dpi=100)


def train_classification(
    task: ClassificationTask,
    config: DemoConfig,
    run_dir: experiments.RunDir,
    options: experiments.Options,
) -> dict:
    """The `train` verb: train `config` in `run_dir` (resuming), then report on the
    best-validation checkpoint. Returns the results.

    Args:
      task: the labelling task.
      config: the run's config.
      run_dir: the run directory.
      options: the command's options.

    Returns:
      The results dict.
    """
    watch = Stopwatch()
    low = config.train_sizes[0]
    policy = bucket_policy(config.batch_size, low, task.typical_edges(low), config.bucket_growth)
    monitor_rng = np.random.default_rng([config.seed, 2])
    monitor = task.generate(monitor_rng, config.monitor_graphs, *config.train_sizes)

    def monitor_eval(params):
        metrics, _, _ = evaluate_classification(task, config, params, *monitor)
        return {"score": metrics["solved"], **metrics}

    model = classification_model(config)
    example = task.example()
    run_training(
        config,
        model,
        example,
        classification_loss,
        task.generate,
        policy,
        monitor_eval,
        run_dir,
        options,
    )
    params, checkpoint = load_report_checkpoint(model, example, config, run_dir.path)
    extra = {"train_time": watch.read(), "checkpoint": checkpoint}
    return report_classification(task, config, params, run_dir, options, extra)


def evaluate_run(
    task: ClassificationTask,
    config: DemoConfig,
    run_dir: experiments.RunDir,
    options: experiments.Options,
) -> dict:
    """The `eval` verb: report on the best-validation checkpoint of an earlier run.

    Args:
      task: the labelling task.
      config: the run's config.
      run_dir: the run directory.
      options: the command's options.

    Returns:
      The results dict.
    """
    model = classification_model(config)
    params, checkpoint = load_report_checkpoint(model, task.example(), config, run_dir.path)
    return report_classification(task, config, params, run_dir, options, {"checkpoint": checkpoint})


def classification_demo(
    task: ClassificationTask,
    presets: Mapping[str, DemoConfig],
    description: str,
    preset_notes: Mapping[str, str],
) -> experiments.Demo:
    """`task`'s demo: `train` and `eval` verbs over `presets`.

    Args:
      task: the labelling task (sort, shortest path); its name, dashed, is the command name.
      presets: its configs by preset name.
      description: the demo's one-line description.
      preset_notes: a line per preset for `--help`.

    Returns:
      The `gnkit.experiments.Demo`.
    """
    return demo(
        task.name.replace("_", "-"),
        description,
        presets,
        lambda config, run_dir, options: train_classification(task, config, run_dir, options),
        lambda config, run_dir, options: evaluate_run(task, config, run_dir, options),
        preset_notes,
    )
