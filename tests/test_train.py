"""Tests for gnkit.train (loop, checkpoints, exact resume) and the Sudoku demo's commands."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _forced_devices import run_with_devices

from gnkit import train as training
from gnkit.demos import sudoku as demo
from gnkit.tasks import sudoku

CONFIG = demo.CONFIGS["tiny"]


@pytest.fixture(scope="module")
def setup():
    pool = sudoku.read_puzzles(sudoku.shipped_data(sudoku.TRAIN_POOL))
    return demo.make_train_step(CONFIG), demo.make_batches(CONFIG, pool)


def _fit(setup, state, num_steps, directory=None, make_batch=None, **kwargs):
    train_step, batches = setup
    return training.fit(
        state,
        train_step,
        make_batch or batches,
        num_steps,
        checkpoint_dir=directory,
        progress=False,
        **kwargs,
    )


def test_short_training_lowers_the_loss(setup):
    model = CONFIG.model()
    quizzes, solutions = (jnp.asarray(part, jnp.int32) for part in setup[1](10_000))

    def loss(params):
        return float(jnp.mean(sudoku.cell_loss(model.apply(params, quizzes, 4), solutions)))

    state = demo.init_state(CONFIG)
    before = loss(state.params)
    after = loss(_fit(setup, state, 40).params)
    assert before > 2.1  # about log(9) at initialisation
    assert after < before - 0.1


def test_resume_continues_exactly(setup, tmp_path):
    straight = _fit(setup, demo.init_state(CONFIG), 6)
    first = _fit(
        setup,
        demo.init_state(CONFIG),
        3,
        tmp_path,
        eval_every_steps=2,
        evaluate=lambda params: {"score": 0.5},
    )
    assert int(first.step) == 3
    assert sorted(path.name for path in tmp_path.iterdir()) == [
        "best.msgpack",
        "checkpoint_000000002.msgpack",
        "checkpoint_000000003.msgpack",
    ]
    resumed_state = training.resume_or(demo.init_state(CONFIG), tmp_path)
    assert int(resumed_state.step) == 3 and resumed_state.best_score == 0.5
    resumed = _fit(setup, resumed_state, 6, tmp_path)
    assert int(resumed.step) == 6
    for got, want in zip(
        jax.tree.leaves((resumed.params, resumed.opt_state)),
        jax.tree.leaves((straight.params, straight.opt_state)),
        strict=True,
    ):
        np.testing.assert_array_equal(got, want)


def test_interrupt_saves_and_resume_matches(setup, tmp_path):
    straight = _fit(setup, demo.init_state(CONFIG), 5)
    calls = []

    def interrupted(step):
        calls.append(step)
        if step == 2 and calls.count(2) == 1:
            raise KeyboardInterrupt
        return setup[1](step)

    with pytest.raises(KeyboardInterrupt):
        _fit(
            setup,
            demo.init_state(CONFIG),
            5,
            tmp_path,
            make_batch=interrupted,
            checkpoint_every_s=1e9,
        )
    assert training.checkpoint_steps(tmp_path) == [2]
    resumed = _fit(
        setup,
        training.resume_or(demo.init_state(CONFIG), tmp_path),
        5,
        tmp_path,
        make_batch=interrupted,
    )
    for got, want in zip(
        jax.tree.leaves((resumed.params, resumed.opt_state)),
        jax.tree.leaves((straight.params, straight.opt_state)),
        strict=True,
    ):
        np.testing.assert_array_equal(got, want)


def test_metrics_log(setup, tmp_path):
    path = tmp_path / "metrics.jsonl"
    _fit(
        setup,
        demo.init_state(CONFIG),
        4,
        metrics_path=path,
        log_every_steps=2,
        examples_per_step=8,
        evaluate=lambda params: {"score": 1.0, "per": {"17": 0.25}},
        eval_every_steps=4,
    )
    rows = training.read_metrics(path)
    assert [row["kind"] for row in rows] == ["train", "train", "eval"]
    assert rows[1]["examples"] == 32 and rows[2]["per"] == {"17": 0.25}
    assert rows[1]["cpu_minutes"] > 0 and "loss" in rows[0]


@pytest.mark.slow
def test_train_eval_solve_export_commands(tmp_path, capsys):
    run = tmp_path / "run"
    assert (
        demo.main(
            [
                "train",
                "--config",
                "tiny",
                "--run-dir",
                str(run),
                "--updates",
                "3",
                "--valid-per-level",
                "1",
                "--valid-givens",
                "20,30",
                "--no-progress",
            ]
        )
        == 0
    )
    result_path, plot_path = tmp_path / "eval.json", tmp_path / "heatmap.png"
    assert (
        demo.main(
            [
                "eval",
                "--checkpoint",
                str(run),
                "--per-level",
                "1",
                "--steps",
                "6",
                "--json",
                str(result_path),
                "--plot",
                str(plot_path),
                "--no-progress",
            ]
        )
        == 0
    )
    result = json.loads(result_path.read_text())
    assert sorted(map(int, result["per_givens"])) == list(range(17, 35))
    assert len(result["per_givens"]["17"]["puzzle_accuracy_per_step"]) == 6
    assert plot_path.stat().st_size > 1000
    exported = tmp_path / "exported"
    assert demo.main(["export", "--from", str(run), "--to", str(exported)]) == 0
    config, params, info = demo.load_model(exported)
    assert config == demo.CONFIGS["tiny"] and info["updates"] == 3
    puzzle = "." * 81
    assert demo.main(["solve", puzzle, "--checkpoint", str(exported), "--steps", "3"]) == 0
    assert "how the beliefs settle" in capsys.readouterr().out


def test_malformed_csv_gives_one_line_error(tmp_path, capsys):
    bad = tmp_path / "bad.csv"
    bad.write_text("quiz,solution\n" + "0" * 81 + "," + "1" * 81 + "\n" + "0" * 81 + ",12\n")
    assert demo.main(["eval", "--data", str(bad), "--checkpoint", str(tmp_path)]) == 2
    error = capsys.readouterr().err.strip()
    assert "\n" not in error and "row 3" in error and "bad.csv" in error


def test_cli_dispatches_to_the_sudoku_demo(capsys):
    from gnkit import cli

    with pytest.raises(SystemExit) as exit_info:
        cli.main(["sudoku", "eval", "--help"])
    assert exit_info.value.code == 0
    assert "--checkpoint" in capsys.readouterr().out
    assert cli.main(["no-such-demo"]) == 2
    assert "sudoku" in capsys.readouterr().out


def test_learning_curves_subtract_evaluation_time(tmp_path):
    rows = [
        {"kind": "train", "step": 1, "cpu_minutes": 1.0},
        {"kind": "eval", "step": 2, "examples": 64, "cpu_minutes": 3.0, "eval_cpu_minutes": 0.5,
         "per_givens": {"17": {"puzzle": 0.0, "cell": 0.2}}},
        {"kind": "eval", "step": 4, "examples": 128, "cpu_minutes": 6.0, "eval_cpu_minutes": 0.5,
         "per_givens": {"17": {"puzzle": 0.1, "cell": 0.5}}},
    ]
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    curves = demo.learning_curves({"cpu": tmp_path})
    assert [row["train_cpu_minutes"] for row in curves["cpu"]] == [2.5, 5.0]
    demo.plot_curves(curves, tmp_path / "curves.png")
    assert (tmp_path / "curves.png").stat().st_size > 1000


def test_sudoku_trains_with_pmap_and_mesh_like_one_device(tmp_path):
    """`train --parallel pmap|mesh` on 8 forced CPU devices (a fresh interpreter): same
    checkpoint after 3 updates as `--parallel single` (the batch of 8 split one per device)."""
    script = (
        "import sys\n"
        "from gnkit.demos import sudoku as demo\n"
        "for mode in ('single', 'pmap', 'mesh'):\n"
        "    code = demo.main(['train', '--config', 'tiny', '--run-dir', f'{sys.argv[1]}/{mode}',\n"
        "        '--updates', '3', '--valid-per-level', '1', '--valid-givens', '30',\n"
        "        '--parallel', mode, '--no-progress'])\n"
        "    assert code == 0, mode\n"
    )
    stdout = run_with_devices(script, str(tmp_path))
    assert "pmap on 8 device(s)" in stdout and "mesh on 8 device(s)" in stdout
    states = {
        mode: training.load_checkpoint(
            training.latest_checkpoint(tmp_path / mode / "checkpoints"), demo.init_state(CONFIG)
        )
        for mode in ("single", "pmap", "mesh")
    }
    assert {int(state.step) for state in states.values()} == {3}
    start = jax.tree.leaves(demo.init_state(CONFIG).params)
    single = jax.tree.leaves(states["single"].params)
    assert max(float(np.abs(a - b).max()) for a, b in zip(single, start, strict=True)) > 1e-3
    for mode in ("pmap", "mesh"):
        for got, want in zip(jax.tree.leaves(states[mode].params), single, strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
