"""The relational demo's verbs: `train` and `eval` of one task (the comparison runner's), or of
every task with `task=all`, each in a run directory of its own inside the command's. Host.

With `task=all` the command's run directory holds `config.json` (task `all`) and a folder per
task (`player-churn/`, ...) that is an ordinary run of that task: its config, checkpoints,
metrics and `train.json`. Training resumes task by task; a task whose replicates all reached
`updates` and whose `train.json` is there is not trained or tested again. The results hold each
task's results under `tasks` and the CPU time each task took in this command.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable

from gnkit.demos.rdl.config import ALL_TASKS, RDLConfig
from gnkit.demos.rdl.report import format_summary
from gnkit.experiments import runner
from gnkit.experiments.checkpoints import trained_updates
from gnkit.experiments.demo import Options, Verb
from gnkit.experiments.results import write_json
from gnkit.experiments.run_dir import RunDir, open_existing, open_for_config


def _finished(config: RDLConfig, run_dir: RunDir) -> dict | None:
    """The saved results of a task run whose replicates all reached `config.updates`."""
    results = run_dir.path / "train.json"
    updates = [trained_updates(run_dir.path, name) for name in config.models]
    if results.is_file() and all(update == config.updates for update in updates):
        return json.loads(results.read_text())
    return None


def _every_task(config: RDLConfig, run_dir: RunDir, options: Options, verb: str,
                run_one: Callable) -> dict:
    """`run_one(task config, task run dir, options)` for each task in its own folder of
    `run_dir`; the results of all, and the combined table printed."""
    run_dir.create()
    tasks, cpu_minutes = {}, {}
    for task in ALL_TASKS:
        task_config = dataclasses.replace(config, task=task)
        path = run_dir.path / task
        task_dir = (open_for_config(path, task_config) if verb == "train"
                    else open_existing(path, RDLConfig))
        start = time.process_time()
        try:
            saved = _finished(task_config, task_dir) if verb == "train" else None
            if saved is not None:
                print(f"{task}: finished earlier, results from {path / 'train.json'}", flush=True)
                tasks[task] = saved
            else:
                if options.progress:
                    print(f"{task}: {verb} in {path}", flush=True)
                tasks[task] = run_one(task_config, task_dir, options)
                write_json(task_dir.file(f"{verb}.json"), tasks[task])
        finally:
            task_dir.release()
        cpu_minutes[task] = round((time.process_time() - start) / 60, 2)
    results = {"task": "all", "tasks": tasks, "cpu_minutes": cpu_minutes}
    print(format_summary(results))
    return results


def verbs(comparison: runner.Comparison) -> list[Verb]:
    """`train` and `eval` of the comparison's verbs, for one task or (`task=all`) every one."""
    single = {verb.name: verb for verb in runner.comparison_verbs(comparison)}

    def wrap(name: str) -> Verb:
        run_one = single[name].function

        def function(config: RDLConfig, run_dir: RunDir, options: Options) -> dict:
            if config.task == "all":
                return _every_task(config, run_dir, options, name, run_one)
            return run_one(config, run_dir, options)

        return dataclasses.replace(single[name], function=function,
                                   help=f"{single[name].help}; --task: player-churn, "
                                        "player-allstar, player-games, or all")

    return [wrap("train"), wrap("eval")]
