"""A search trial trained on one seed or several, one after another (the objective is their mean)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
import optuna

from rlexp.config.overrides import as_override
from rlexp.config.plain import plain_dict
from rlexp.config.schema import ExperimentConfig, as_experiment, as_node
from rlexp.errors import Interrupted
from rlexp.lifecycle.state import completed_run, config_difference
from rlexp.run.manager import RunEnd, run
from rlexp.rundir.contract import SEED_DIR_PREFIX, read_evaluations, write_trial
from rlexp.search.pruning import ReportToTrial

log = logging.getLogger("rlexp.run.manager")


def run_trial(
    cfg: ExperimentConfig,
    run_dir: Path,
    choices: dict[str, Any],
    command: list[str],
    warnings: list[str],
    trial: optuna.Trial,
    n_seeds: int,
    on_end: RunEnd | None = None,
    alone: list[str] | None = None,
) -> float:
    """One trial of a search: ``n_seeds`` runs with seeds cfg.seed, cfg.seed + 1, ... one after another,
    each a normal run in ``run_dir/seed_<s>`` (in ``run_dir`` itself for one seed); the objective is
    the mean of their final evaluations. Pruning may stop the trial during any of them. A trial job
    started again (a requeued SLURM job) keeps the seeds it completed and resumes the one it stopped in.
    ``on_end``: told as each seed's run completes; ``alone``: the command that runs the trial's run on its
    own, outside the search (each run's command.txt: with its seed and run dir)."""
    alone = alone or command

    def rerun(seed: int, seed_dir: Path) -> list[str]:
        return [
            *(a for a in alone if not a.startswith("seed=")),
            f"seed={seed}",
            as_override("hydra.run.dir", str(seed_dir)),
        ]

    if n_seeds == 1:
        reporter = ReportToTrial(trial)
        return run(
            cfg, run_dir, choices, command, warnings, reporter, rerun=rerun(cfg.seed, run_dir), on_end=on_end
        ).final_mean
    seeds = list(range(cfg.seed, cfg.seed + n_seeds))
    finals: list[float] = []
    late: Interrupted | None = None
    reporters: list[ReportToTrial] = []
    for seed in seeds:
        seed_cfg = as_experiment(as_node(cfg).copy())
        seed_cfg.seed = seed
        seed_dir = run_dir / f"{SEED_DIR_PREFIX}{seed}"
        per_seed = cfg.callbacks.eval.n_evaluations
        reporter = ReportToTrial(trial, earlier=[r.values for r in reporters], per_seed=per_seed)
        done = completed_run(seed_dir)
        if done is not None and not config_difference(plain_dict(seed_cfg), seed_dir):  # reported by an earlier attempt
            evaluations = read_evaluations(seed_dir)
            if evaluations is not None:
                reporter.values = [float(m) for m in evaluations.means]
            finals.append(done.final_mean)
        else:
            seed_command = [arg for arg in command if not arg.startswith("seed=")] + [f"seed={seed}"]
            try:
                finals.append(
                    run(
                        seed_cfg,
                        seed_dir,
                        choices,
                        seed_command,
                        warnings,
                        reporter,
                        rerun=rerun(seed, seed_dir),
                        on_end=on_end,
                    ).final_mean
                )
            except Interrupted as err:  # a stop signal as a seed completed: on the last, the trial is complete
                if err.completed is not None and seed != seeds[-1]:
                    err.completed = None  # the trial stopped (its completed seeds are kept when it runs again)
                if err.completed is None:
                    raise
                finals.append(err.completed)
                late = err
        reporters.append(reporter)
    mean = float(np.mean(finals))
    write_trial(run_dir, {"seeds": seeds, "finals": finals, "mean": mean})
    log.info("trial %d mean final eval over %d seeds: %.2f", trial.number, n_seeds, mean)
    if late is not None:  # the search stops before its next trial (it records this one from trial.json)
        raise late
    return mean
