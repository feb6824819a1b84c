"""The comparison runner: each named model trained in turn and resumed exactly, the best validated
or the latest state handed to the report, chunked prediction, the shared Adam recipe, and a stop
request that propagates."""

import dataclasses
import math
import re

import jax.numpy as jnp
import numpy as np
import optax
import pytest

from gnkit import experiments
from gnkit import train as training
from gnkit.experiments import runner, setting


@dataclasses.dataclass(frozen=True)
class LineConfig:
    models: tuple[str, ...] = ("slope", "offset")
    updates: int = setting(6, minimum=1)
    eval_every_updates: int = setting(2, minimum=1)
    learning_rate: float = 0.1
    seed: int = 0


def _load_data(config, run_dir, progress):
    x = np.linspace(-1, 1, 16, dtype=np.float32)[:, None]
    return {"x": x, "y": 3 * x + 1}


def _predict(name, params, x):
    """`slope` fits y = a x, `offset` fits y = a x + b."""
    value = params["a"] * x
    return value + params["b"] if name == "offset" else value


def _init(name, config, data):
    params = {"a": jnp.zeros(())}
    return {**params, "b": jnp.zeros(())} if name == "offset" else params


def _loss(name, config, data):
    def loss_fn(params, batch):
        error = _predict(name, params, batch["x"]) - batch["y"]
        return jnp.mean(error**2), {"max_error": jnp.max(jnp.abs(error))}

    return loss_fn


def _make_batch(config, data):
    def batch(update):
        rows = np.random.default_rng([config.seed, update]).integers(0, 16, 4)
        return {key: value[rows] for key, value in data.items()}

    return batch


# Validation scores, by (model, update): updates 2 and 6 score best, update 4 worst, so the best
# validated state is update 2 for `slope` (a tie at 6 goes to the later state) and update 6 for
# `offset`.
SCORES = {"slope": {2: 1.0, 4: 0.0, 6: 1.0}, "offset": {2: 0.5, 4: 0.0, 6: 0.9}}


def _validate(name, config, data):
    calls = iter(sorted(SCORES[name].items()))

    def evaluate(params):
        _, score = next(calls)
        return {"score": score, "a": float(params["a"])}

    return evaluate


def _report(config, run_dir, options, states, data):
    return {name: {"update": int(state.step), "a": float(state.params["a"])}
            for name, state in states.items()}


LINE = runner.Comparison(
    load_data=_load_data,
    init=_init,
    loss=_loss,
    optimizer=lambda config: optax.sgd(config.learning_rate),
    make_batch=runner.same_batches(_make_batch),
    validate=_validate,
    report=_report,
    examples_per_step=lambda config: 4,
)


def _demo(comparison):
    return experiments.Demo("line", "Fit a line.", presets={"default": LineConfig()},
                            verbs=runner.comparison_verbs(comparison),
                            preset_notes={"default": "six updates"})


def _sgd_by_hand(name, config, updates):
    """The parameters after `updates` plain SGD steps on the same batches, in NumPy."""
    data, batches = _load_data(config, None, False), _make_batch(config, _load_data(config, 0, 0))
    a, b = 0.0, 0.0
    for update in range(updates):
        batch = batches(update)
        x, y = batch["x"][:, 0].astype(np.float64), batch["y"][:, 0]
        error = a * x + (b if name == "offset" else 0.0) - y
        a -= config.learning_rate * np.mean(2 * error * x)
        if name == "offset":
            b -= config.learning_rate * np.mean(2 * error)
    del data
    return a, b


def test_train_fits_each_model_and_reports_its_best_validated_state(tmp_path):
    results = experiments.run_verb(_demo(LINE), "train", LineConfig(), tmp_path / "run",
                                   progress=False)
    assert results["slope"]["update"] == 6 and results["offset"]["update"] == 6
    slope_a, _ = _sgd_by_hand("slope", LineConfig(), 6)
    assert results["slope"]["a"] == pytest.approx(slope_a, rel=1e-5)
    for name in ("slope", "offset"):
        checkpoints = tmp_path / "run" / "checkpoints" / name
        assert (checkpoints / training.BEST_CHECKPOINT).exists()
        curve = runner.eval_records(experiments.RunDir(tmp_path / "run", LineConfig()), name,
                                    ("step", "score"))
        assert curve == {"step": [2, 4, 6], "score": [SCORES[name][s] for s in (2, 4, 6)]}


def _eval_lines(text: str) -> list[tuple[int, float]]:
    """`(step, score)` of each `eval at step N: score=S, ...` line."""
    found = re.findall(r"^eval at step (\d+): score=([-\d.e]+)", text, re.MULTILINE)
    return [(int(step), float(score)) for step, score in found]


def test_evaluations_print_a_line_each_only_with_verbose(tmp_path, capsys):
    demo = _demo(LINE)
    argv = ["train", "--no-progress", "--run-dir"]
    assert experiments.run(demo, [*argv, str(tmp_path / "quiet")]) == 0
    quiet = capsys.readouterr()
    assert "eval at" not in quiet.out + quiet.err and "run directory:" in quiet.out
    assert experiments.run(demo, [*argv, str(tmp_path / "verbose"), "--verbose"]) == 0
    lines = _eval_lines(capsys.readouterr().out)
    assert lines == [(step, SCORES[name][step]) for name in LineConfig().models
                     for step in (2, 4, 6)]
    assert experiments.run(demo, ["train", "--run-dir", str(tmp_path / "bar")]) == 0
    bar = capsys.readouterr()
    assert "eval at" not in bar.out + bar.err and "val_score=0.9 " in bar.err


def test_each_model_trains_on_the_batches_made_for_its_name(tmp_path):
    seeds = {"slope": 11, "offset": 12}
    own_order = dataclasses.replace(LINE, make_batch=lambda name, config, data: _make_batch(
        dataclasses.replace(config, seed=seeds[name]), data), report_best=False)
    results = experiments.run_verb(_demo(own_order), "train", LineConfig(), tmp_path / "run",
                                   progress=False)
    for name, seed in seeds.items():
        a, _ = _sgd_by_hand(name, dataclasses.replace(LineConfig(), seed=seed), 6)
        assert results[name]["a"] == pytest.approx(a, rel=1e-5)
    shared_a, _ = _sgd_by_hand("slope", LineConfig(), 6)
    assert results["slope"]["a"] != pytest.approx(shared_a, rel=1e-3)


def test_each_model_trains_under_its_own_config(tmp_path):
    updates = {"slope": 4, "offset": 6}
    own_config = dataclasses.replace(LINE, report_best=False, model_config=lambda name, config,
                                     data: dataclasses.replace(config, updates=updates[name]))
    results = experiments.run_verb(_demo(own_config), "train", LineConfig(), tmp_path / "run",
                                   progress=False)
    assert {name: result["update"] for name, result in results.items()} == updates
    a, _ = _sgd_by_hand("slope", LineConfig(), 4)
    assert results["slope"]["a"] == pytest.approx(a, rel=1e-5)
    assert experiments.run_verb(_demo(own_config), "eval", None, tmp_path / "run") == results


def test_latest_state_when_the_report_asks_for_it(tmp_path):
    latest = dataclasses.replace(LINE, report_best=False)
    results = experiments.run_verb(_demo(latest), "train", LineConfig(), tmp_path / "run",
                                   progress=False)
    a, b = _sgd_by_hand("offset", LineConfig(), 6)
    assert results["offset"] == {"update": 6, "a": pytest.approx(a, rel=1e-5)}
    del b


def test_best_state_is_the_highest_score_the_latest_of_ties(tmp_path):
    config = dataclasses.replace(LineConfig(), models=("slope",))
    scores = {"slope": {2: 1.0, 4: 0.0, 6: 0.5}}
    comparison = dataclasses.replace(
        LINE, validate=lambda name, config, data: _scored(scores[name])
    )
    results = experiments.run_verb(_demo(comparison), "train", config, tmp_path / "run",
                                   progress=False)
    a, _ = _sgd_by_hand("slope", config, 2)
    assert results["slope"] == {"update": 2, "a": pytest.approx(a, rel=1e-5)}


def _scored(scores):
    calls = iter(sorted(scores.items()))
    return lambda params: {"score": next(calls)[1]}


def _fit_score(name, config, data):
    """Minus the mean squared error on all the data: a score that depends on the state alone."""
    return lambda params: {
        "score": -float(np.mean((np.asarray(_predict(name, params, data["x"])) - data["y"]) ** 2))
    }


def test_a_stopped_run_resumes_to_the_uninterrupted_result(tmp_path):
    config = dataclasses.replace(LineConfig(), models=("offset",))
    comparison = dataclasses.replace(LINE, validate=_fit_score, report_best=False)
    whole = experiments.run_verb(_demo(comparison), "train", config, tmp_path / "whole",
                                 progress=False)
    stops = iter([False, False, True])  # a stop request during the third update

    with pytest.raises(training.TrainingStopped):
        experiments.run_verb(_demo(comparison), "train", config, tmp_path / "cut",
                             progress=False, should_stop=lambda: next(stops, True))
    saved = training.latest_checkpoint(tmp_path / "cut" / "checkpoints" / "offset")
    assert 0 < int(training.load_checkpoint(saved, runner.initial_state(
        comparison, "offset", config, None)).step) < 6
    resumed = experiments.run_verb(_demo(comparison), "train", config, tmp_path / "cut",
                                   progress=False)
    assert resumed["offset"] == whole["offset"]


def test_eval_reports_a_finished_run_and_refuses_a_missing_model(tmp_path):
    demo = _demo(LINE)
    trained = experiments.run_verb(demo, "train", LineConfig(), tmp_path / "run", progress=False)
    assert experiments.run_verb(demo, "eval", None, tmp_path / "run") == trained
    run_dir = experiments.RunDir(tmp_path / "run", LineConfig())
    data = _load_data(LineConfig(), run_dir, False)
    with pytest.raises(experiments.UsageError, match="no checkpoint of model nothing"):
        runner.trained_state(LINE, "nothing", LineConfig(), run_dir, data)


@pytest.mark.parametrize("chunk", [1, 3, 7, 10, 25])
def test_predict_in_chunks_equals_one_call_and_compiles_one_shape(chunk):
    inputs = np.arange(20.0).reshape(10, 2)
    shapes = set()

    def answer(params, batch):
        shapes.add(batch.shape)
        return batch.sum(-1) * params

    got = runner.predict_in_chunks(answer, 2.0, inputs.__getitem__, 10, chunk)
    np.testing.assert_array_equal(got, inputs.sum(-1) * 2.0)
    assert shapes == {(min(chunk, 10), 2)}
    per_step = runner.predict_in_chunks(lambda p, b: np.stack([b[:, 0], b[:, 1]]), None,
                                        inputs.__getitem__, 10, chunk, axis=1)
    np.testing.assert_array_equal(per_step, inputs.T)


def _rate(step, peak=0.2):
    """The recipe's learning rate by hand for 100 updates: a linear warm-up over 10, then a
    cosine from `peak` to 5% of it at update 100."""
    if step < 10:
        return peak * step / 10
    fraction = (step - 10) / 90
    return peak / 20 + (peak - peak / 20) * 0.5 * (1 + math.cos(math.pi * fraction))


def test_warmup_cosine_adam_steps_are_the_learning_rate_by_hand():
    """With a constant gradient every Adam step is the learning rate times the gradient's sign
    (bias-corrected moments), so the steps trace the schedule."""
    optimizer = runner.warmup_cosine_adam(0.2, 100)
    params = {"w": jnp.zeros(3)}
    state = optimizer.init(params)
    grads = {"w": jnp.array([0.1, -0.2, 0.05])}  # norm < 1: clipping leaves it
    for step in range(100):
        step_taken, state = optimizer.update(grads, state, params)
        np.testing.assert_allclose(step_taken["w"], -_rate(step) * np.sign(grads["w"]),
                                   rtol=1e-4, atol=1e-7)


def test_warmup_cosine_adam_clips_the_global_norm_first():
    """Against optax's own chain of the same pieces, on gradients of norm 50 and 0.1."""
    schedule = optax.warmup_cosine_decay_schedule(0.0, 0.2, 10, 100, 0.01)
    reference = optax.chain(optax.clip_by_global_norm(0.5), optax.adam(schedule))
    optimizer = runner.warmup_cosine_adam(0.2, 100, clip_norm=0.5)
    params = {"w": jnp.zeros(2)}
    ours, theirs = optimizer.init(params), reference.init(params)
    for grads in ([30.0, 40.0], [0.06, -0.08], [30.0, -40.0]) * 4:
        grads = {"w": jnp.array(grads)}
        mine, ours = optimizer.update(grads, ours, params)
        expected, theirs = reference.update(grads, theirs, params)
        np.testing.assert_allclose(mine["w"], expected["w"], rtol=1e-6)


def test_a_model_whose_loss_diverges_stops_is_named_and_its_best_state_is_tested(tmp_path):
    """`offset` trains with a learning rate of 1e6: its loss overflows to inf within four
    updates, so it stops at the log interval ending at update 4 and the report gets its state
    validated at update 2; `slope` trains to the end as before."""
    explosive = dataclasses.replace(
        LINE, model_config=lambda name, config, data: dataclasses.replace(
            config, learning_rate=1e6) if name == "offset" else config)
    results = experiments.run_verb(_demo(explosive), "train", LineConfig(), tmp_path / "run",
                                   progress=False)
    assert set(results["diverged"]) == {"offset"}
    assert results["diverged"]["offset"]["step"] == 4
    assert "training diverged" in results["diverged"]["offset"]["message"]
    assert results["offset"]["update"] == 2 and np.isfinite(results["offset"]["a"])
    assert results["slope"]["update"] == 6
