"""Where and how a trial runs: its run (its own, or a lost trial's to continue from its checkpoint), its
seed and run dir, and its job's overrides."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import optuna

from rlexp.config.overrides import as_override
from rlexp.lifecycle.lock import abandoned, is_free, wait_until_free
from rlexp.rundir.contract import INTERRUPTED
from rlexp.search.optuna_private import trial_id
from rlexp.search.results import trial_dir
from rlexp.search.study import ENV_STUDY, ENV_TRIAL, RUN_DIR_ATTR, RUN_NUMBER_ATTR, lost_trial
from rlexp.sweeper.outcomes import run_record

log = logging.getLogger(__name__)
# how long a lost trial's run may take to let go of its dir (a cancelled job saving its checkpoint within
# SLURM's KillWait) before the trial that runs its parameters again starts a run of its own
HANDOVER_WAIT_S = 300.0


def run_number(study: optuna.Study, trial: optuna.Trial, sweep_dir: Path) -> int:
    """Whose run a trial is: its own, or, for a trial that runs a lost trial's parameters again (its
    sweeper was killed or preempted), the lost trial's run when it is in this sweep's dir: the same
    seed and run dir, so that it continues from the lost run's checkpoint (rlexp.lifecycle.state)."""
    lost = lost_trial(study, trial)
    if lost is None:
        return trial.number
    number = int(lost.user_attrs.get(RUN_NUMBER_ATTR, lost.number))
    run_dir = trial_dir(sweep_dir, number)
    if Path(lost.user_attrs.get(RUN_DIR_ATTR, "")) != run_dir:
        return trial.number  # a run of its own: the lost run is in another worker's sweep dir
    # (a cancelled job's run may still be saving its checkpoint: its SLURM job shows as over at once)
    wait_until_free(run_dir, HANDOVER_WAIT_S)
    if not _resumable_now(run_dir):
        return trial.number  # a run of its own: the lost run completed, or is still going
    trial.set_user_attr(RUN_NUMBER_ATTR, number)
    record = run_record(run_dir)
    step = None if record is None else record.steps
    log.info(
        "trial %d continues the run of trial %d (%s) from its checkpoint%s",
        trial.number,
        lost.number,
        run_dir.name,
        f" at step {step}" if step else "",
    )
    return number


def _resumable_now(run_dir: Path) -> bool:
    """A lost trial's run that a new trial can continue: interrupted (saved on a signal), or abandoned
    (its process is gone: the lock is free, or its SLURM job is over), with no process holding it now.
    A run that completed, or whose process may still run (a local job that outlived its sweeper, a
    requeued SLURM job), is left alone: the new trial runs on its own."""
    record = run_record(run_dir)
    if record is None or is_free(run_dir) is False:
        return False
    return record.status == INTERRUPTED or abandoned(record, run_dir)


def run_overrides(params: dict[str, Any], fixed: list[str], n_timesteps: Any, seed: int, subdir: str) -> list[str]:
    """A normal run with a trial's parameters (the per-trial budget explicit for re-run commands)."""
    budget = [] if any(o.lstrip("+").startswith("n_timesteps=") for o in fixed) else [f"n_timesteps={n_timesteps}"]
    return [
        *fixed,
        *budget,
        *(as_override(key, value) for key, value in params.items()),
        f"seed={seed}",
        f"hydra.sweep.subdir={subdir}",
    ]


def job_overrides(
    trial: optuna.Trial,
    fixed: list[str],
    *,
    n_timesteps: int,
    env_set: Mapping[str, Any],
    study_name: str,
    seed: int,
    run: int,
) -> list[str]:
    """The trial's run (run number ``run``, first seed ``seed``, ``n_timesteps`` steps), connected to its live
    trial in the study (for reports and pruning). ``env_set``: the sweep's ``hydra.job.env_set``.

    hparams=search declares the env_set keys, so they go as plain ``hydra.*`` overrides that the
    launchers leave out of each trial's line; without it they must be added (``++``). The storage's
    URL, which may hold a password, is not among them: Hydra writes env_set into each trial's .hydra/
    (the jobs find it in the environment that the sweeper sets, which every launcher passes on)."""
    declared = env_set
    env = {ENV_STUDY: f"'{study_name}'", ENV_TRIAL: trial_id(trial)}
    return [
        *run_overrides(trial.params, fixed, n_timesteps, seed, str(trial_dir(Path(), run))),
        *(f"{'' if key in declared else '++'}hydra.job.env_set.{key}={value}" for key, value in env.items()),
    ]
