"""How a trial's job ended: as its launcher returned it, or, where the launcher has nothing (a batch it
failed, a stop signal), as the trial's run dir records it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import optuna
from hydra.core.utils import JobReturn, JobStatus

from rlexp.config.hydra_versions import job_value
from rlexp.errors import ConfigError
from rlexp.rundir.contract import COMPLETED, INTERRUPTED, PRUNED, SEED_DIR_PREFIX, TRIAL_FILE
from rlexp.rundir.record import RunRecord, read_record
from rlexp.search.study import RUN_DIR_ATTR


@dataclass(frozen=True)
class JobOutcome:
    """``completed``: the job returned ``value``, the trial's objective; otherwise ``value`` is the exception
    it failed with (``optuna.TrialPruned``: pruned)."""

    completed: bool
    value: Any

    @classmethod
    def of(cls, job: JobReturn) -> JobOutcome:
        return cls(job.status == JobStatus.COMPLETED, job_value(job))


def recorded_outcome(trial: optuna.Trial, err: BaseException) -> JobOutcome:
    """How a trial ended, from its run dir, when the launcher failed its whole batch: submitit's
    launcher raises for the first job that died (cancelled, preempted, out of memory) and drops the
    results of the others, which their run dirs still hold."""
    run_dir = Path(trial.user_attrs[RUN_DIR_ATTR])
    if (run_dir / TRIAL_FILE).is_file():  # several seeds, all completed
        return JobOutcome(True, json.loads((run_dir / TRIAL_FILE).read_text())["mean"])

    records = {d: run_record(d) for d in [run_dir, *sorted(run_dir.glob(f"{SEED_DIR_PREFIX}*"))]}
    record = records[run_dir]
    if record is not None and record.status == COMPLETED and record.final_score is not None:
        return JobOutcome(True, record.final_score)
    if any(r is not None and r.status == PRUNED for r in records.values()):
        return JobOutcome(False, optuna.TrialPruned())
    return JobOutcome(False, err)


def stopped_at(trial: optuna.Trial) -> int | None:
    """The step at which a signal stopped the trial's run (None: it saved nothing, or never started)."""
    record = run_record(Path(trial.user_attrs[RUN_DIR_ATTR]))
    return record.steps if record is not None and record.status == INTERRUPTED else None


def run_record(run_dir: Path) -> RunRecord | None:
    """The run's record; None when it has none, or an unreadable one (that run's outcome is unknown)."""
    try:
        return read_record(run_dir)
    except ConfigError:
        return None
