"""What the study is told of a trial that ended: its value, pruned, or failed with the reason; or, for a
trial a stop signal cut short, queued again for the next worker."""

from __future__ import annotations

import logging
import math
from pathlib import Path

import optuna
from optuna.trial import TrialState

from rlexp.errors import Diverged
from rlexp.rundir.contract import FAILED
from rlexp.search.optuna_private import stored_trial
from rlexp.search.study import RUN_DIR_ATTR, hand_over
from rlexp.sweeper.outcomes import JobOutcome, run_record, stopped_at

log = logging.getLogger(__name__)


def tell(study: optuna.Study, trial: optuna.Trial, outcome: JobOutcome) -> None:
    result = outcome.value  # the value, or the exception of a failed job
    if isinstance(result, optuna.TrialPruned):
        study.tell(trial, state=TrialState.PRUNED)
        log.info("trial %d pruned", trial.number)
    elif isinstance(result, Diverged):  # its hyperparameters are bad, not the search: no failure counted
        trial.set_user_attr("fail_reason", " ".join(str(result).split())[:1000])
        study.tell(trial, state=TrialState.PRUNED)
        log.warning("trial %d pruned: %s", trial.number, result)
    elif isinstance(result, BaseException):
        trial.set_user_attr("fail_reason", f"{type(result).__name__}: {' '.join(str(result).split())}"[:1000])
        study.tell(trial, state=TrialState.FAIL)
        log.warning("trial %d failed: %s", trial.number, result)
    elif result is None or not math.isfinite(float(result)):
        trial.set_user_attr("fail_reason", f"objective is {result}")
        study.tell(trial, state=TrialState.FAIL)
        log.warning("trial %d failed: objective is %s", trial.number, result)
    else:
        study.tell(trial, float(result))
        log.info("trial %d: %.4g (best %.4g)", trial.number, float(result), study.best_value)


def tell_or_hand_over(study: optuna.Study, trial: optuna.Trial, outcome: JobOutcome) -> None:
    """A trial cut short by a stop signal: one whose run ended (completed, pruned, failed on its own) is
    told so; one whose run was stopped, or never started, is queued again."""
    record = run_record(Path(trial.user_attrs[RUN_DIR_ATTR]))
    if outcome.completed or isinstance(outcome.value, optuna.TrialPruned):
        tell(study, trial, outcome)
    elif record is not None and record.status == FAILED:
        error = record.error if isinstance(record.error, str) else None
        tell(study, trial, JobOutcome(False, RuntimeError(error)))
    elif hand_over(study, stored_trial(study, trial), stopped_at(trial)):
        log.info("trial %d queued again (from its checkpoint, if its run saved one)", trial.number)
