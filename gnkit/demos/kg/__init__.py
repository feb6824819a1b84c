"""Link prediction on knowledge graphs: TransE, DistMult, ComplEx, RotatE, with an optional
R-GCN encoder, trained and evaluated with filtered MRR and Hits@1/3/10.

`gnkit kg train --data umls --model rotate` trains one model on one graph (`--data`: a shipped
graph, `kinships`, `nations`, `umls`, or a directory of `train.txt`, `valid.txt`, `test.txt`
triple files; `--model`: `transe`, `transe_l2`, `distmult`, `complex`, `rotate`, `rotate_l2`
(PyKEEN's RotatE: the Euclidean norm of the complex difference)), evaluating
validation MRR every `eval_every_epochs` epochs (the best state is kept), then tests the best
state: filtered ranks of every test triple against all entities as head and as tail. It prints
MRR / Hits and draws the learning curve (`curve_<data>_<model>.png`: training loss and
validation MRR by epoch); `--json` holds the test metrics at the top level (`mrr`, `hits@1`,
`hits@3`, `hits@10`). One run directory holds any number of (graph, model) pairs, each in its
own checkpoint folder, all trained with the run's config. `eval` tests a finished pair again.

Two recipes (`training`): `1-n` (every entity scored as tail and as head, cross-entropy, N3
regularisation of DistMult and ComplEx (`penalized`); the default) and `negatives` (uniform
corruption of head or tail, the side drawn per corruption or per triple (`negative_sides`),
RotatE's self-adversarial loss or TransE's margin loss). An epoch is one jitted scan over
device-side batches. `--help` lists the presets and what each costs; results are on the docs'
knowledge-graph results page. Host driver around jitted epochs.
"""

from __future__ import annotations

from collections.abc import Sequence

from gnkit import experiments
from gnkit.demos.kg import data as data_module
from gnkit.demos.kg import report, training
from gnkit.demos.kg.config import CONFIGS, MODEL_NAMES, PRESET_NOTES, KGConfig


def _add_flags(parser) -> None:
    """`--data` and `--model`: the (graph, model) pair a verb trains or tests."""
    parser.add_argument("--data", default="umls",
                        help="kinships, nations, umls, or a directory of train/valid/test.txt")
    parser.add_argument("--model", default="rotate", choices=MODEL_NAMES)


def train(config: KGConfig, run_dir: experiments.RunDir, options: experiments.Options):
    """The `train` verb: train `--model` on `--data` (resuming), then test the best state."""
    if options.parallel != "single":
        raise experiments.UsageError(
            f"--parallel {options.parallel}: the kg demo trains on one device (an epoch is one "
            "jitted scan; these graphs fit any device)"
        )
    data, model = options.flags.data, options.flags.model
    pair = training.make_pair(config, model, data_module.load_data(data))
    name = data_module.pair_name(data, model)
    training.fit_pair(pair, run_dir, options, name)
    return report.report_pair(pair, run_dir, options, data, name)


def evaluate(config: KGConfig, run_dir: experiments.RunDir, options: experiments.Options):
    """The `eval` verb: test the best state of `--model` on `--data` of a finished run."""
    data, model = options.flags.data, options.flags.model
    pair = training.make_pair(config, model, data_module.load_data(data))
    return report.report_pair(pair, run_dir, options, data, data_module.pair_name(data, model))


DEMO = experiments.Demo(
    "kg",
    "Knowledge-graph link prediction: TransE, DistMult, ComplEx, RotatE (and an R-GCN encoder), "
    "filtered MRR and Hits@k.",
    presets=CONFIGS,
    verbs=[
        experiments.Verb("train", train, "train --model on --data (resumes), then test",
                         add_flags=_add_flags),
        experiments.Verb("eval", evaluate, "test a trained --model on --data again",
                         run_dir="existing", add_flags=_add_flags),
    ],
    preset_notes=PRESET_NOTES,
)

__all__ = ["CONFIGS", "DEMO", "KGConfig", "main"]


def main(argv: Sequence[str] | None = None) -> int:
    """`gnkit kg train|eval ...`; returns the exit status."""
    return experiments.run(DEMO, argv)
