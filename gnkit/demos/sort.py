"""Sort a list with a graph network, after graph_nets' sort demo.

    python -m gnkit.demos.sort train                 # default config, then the test report
    python -m gnkit.demos.sort eval --out runs/sort  # re-evaluate a finished run

Each list (8-16 numbers in training) is a fully connected graph; an `EncodeProcessDecode` with
10 processing steps labels the minimum and, for each element, the edge to the next element in
sorted order. The report gives node and edge accuracy and the fraction of lists solved (every
edge right) on 8-16 and 16-32 elements; `--out` (default `runs/sort`) gets `results.json`,
`metrics.jsonl`, checkpoints, `training.png` and `example.png`. Host driver.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from gnkit.demos import _graph_nets as common
from gnkit.tasks import sorting

CONFIGS = {
    "default": common.DemoConfig(train_steps=3000),
    "tiny": common.DemoConfig(
        train_steps=30,
        batch_size=8,
        latent_size=8,
        num_processing_steps=3,
        eval_processing_steps=3,
        train_sizes=(4, 6),
        test_sizes=((4, 6),),
        eval_graphs=20,
        eval_batch_size=10,
        monitor_graphs=10,
        eval_every_steps=15,
    ),
}


def _generate(rng, n_graphs, min_elements, max_elements):
    return sorting.generate_graphs(rng, n_graphs, min_elements, max_elements)


def model_for(config: common.DemoConfig):
    return common.make_model(config, edge_output_size=2, node_output_size=2)


def _example():
    return sorting.sort_graph(np.arange(3.0))[0]


def _test_set(config: common.DemoConfig, sizes: tuple[int, int], seed_offset: int):
    return _generate(np.random.default_rng([config.seed, 1, seed_offset]), config.eval_graphs, *sizes)


def evaluate(config: common.DemoConfig, params, sets) -> dict[str, dict[str, float]]:
    """Accuracy and fraction solved on each `(name, inputs, targets)` test set."""
    predict = common.make_predict(model_for(config), config.eval_processing_steps)
    return {
        name: common.classification_metrics(
            predict, params, inputs, targets, config.eval_batch_size, sorting.metrics
        )
        for name, inputs, targets in sets
    }


def plot_example(config: common.DemoConfig, params, path: Path) -> None:
    """Predicted vs true "next element" edges of one test list, elements in sorted order."""
    inputs, targets = _test_set(config, config.test_sizes[0], 0)
    predict = common.make_predict(model_for(config), config.eval_processing_steps)
    _, edges = common.predict_graphs(predict, params, inputs[:1], 1)
    n = len(inputs[0].nodes)
    order = np.argsort(inputs[0].nodes[:, 0])
    probability = np.exp(edges[:, 1]) / np.exp(edges).sum(-1)
    predicted = np.zeros((n, n))
    predicted[inputs[0].senders, inputs[0].receivers] = probability
    truth = np.zeros((n, n))
    truth[targets[0].senders, targets[0].receivers] = targets[0].edges[:, 1]
    plt = common.pyplot()
    figure, axes = plt.subplots(1, 2, figsize=(8, 3.8), constrained_layout=True)
    for axis, matrix, title in zip(axes, (truth, predicted), ("target", "predicted"), strict=True):
        image = axis.imshow(matrix[np.ix_(order, order)], vmin=0, vmax=1, cmap="viridis")
        axis.set(title=f"{title}: next element", xlabel="receiver rank", ylabel="sender rank")
    figure.colorbar(image, ax=axes, shrink=0.8)
    figure.savefig(path, dpi=110)
    plt.close(figure)


def report(config: common.DemoConfig, params, out_dir: Path, extra: dict) -> dict:
    """Evaluate on the test sets, plot, and write `results.json`."""
    sets = [
        (f"{low}-{high}", *_test_set(config, (low, high), index))
        for index, (low, high) in enumerate(config.test_sizes)
    ]
    watch = common.Stopwatch()
    results = {"demo": "sort", **extra, "test": evaluate(config, params, sets)}
    results["eval_time"] = watch.read()
    plot_example(config, params, out_dir / "example.png")
    common.plot_training(out_dir, "solved", f"lists solved ({config.monitor_graphs} monitored)")
    common.write_results(out_dir, results)
    return results


def train(config: common.DemoConfig, out_dir: str | Path, progress: bool = True) -> dict:
    """Train `config` into `out_dir` (resuming), then report. Returns the results."""
    out_dir = common.prepare_out_dir(out_dir, config)
    watch = common.Stopwatch()
    model = model_for(config)
    policy = common.bucket_policy(config.batch_size, config.train_sizes[0], config.train_sizes[0] ** 2)
    monitor = _generate(
        np.random.default_rng([config.seed, 2]), config.monitor_graphs, *config.train_sizes
    )

    def monitor_eval(params):
        metrics = evaluate(config, params, [("monitor", *monitor)])["monitor"]
        return {"score": metrics["solved"], **metrics}

    params = common.run_training(
        config,
        model,
        _example(),
        common.classification_loss,
        common.random_batches(config, _generate, policy),
        monitor_eval,
        out_dir,
        progress,
    )
    return report(config, params, out_dir, {"train_time": watch.read()})


def main(argv: Sequence[str] | None = None) -> int:
    """`gnkit sort train|eval ...`."""
    parser = common.build_parser("sort", __doc__.split("\n")[0], CONFIGS)
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if args.command == "train":
        train(common.config_from_args(args, CONFIGS), args.out, not args.no_progress)
    else:
        config = common.saved_config(args.out)
        params = common.load_params(model_for(config), _example(), config, args.out)
        report(config, params, Path(args.out), {})
    return 0


if __name__ == "__main__":
    sys.exit(main())

