"""How far a sweep goes: the trials it still asks for (its n_trials; max_total_trials over every sweeper
of the study) and the failure rate that ends it."""

from __future__ import annotations

import optuna
from optuna.trial import TrialState

from rlexp.errors import ConfigError
from rlexp.search.study import OVER_CAP_ATTR, counted_trials, finished_trials
from rlexp.sweeper.settings import SweepSettings


def trials_to_ask(study: optuna.Study, settings: SweepSettings) -> int:
    """How many trials the study still needs (a queued trial, one that runs again, holds its place in the cap)."""
    remaining = settings.n_trials - len(finished_trials(study))
    if settings.max_total_trials is not None:
        counted = counted_trials(study)
        waiting = sum(t.state == TrialState.WAITING for t in counted)
        remaining = min(remaining, settings.max_total_trials - len(counted) + waiting)
    return remaining


def within_cap(study: optuna.Study, trials: list[optuna.Trial], max_total_trials: int | None) -> list[optuna.Trial]:
    """Trials past max_total_trials (two sweepers asked at the same moment) are given back.

    Trial numbers are unique and increasing across processes, so each process decides the same way:
    a trial is over the cap if more than max_total_trials counted trials have a number up to its own.
    """
    if max_total_trials is None:
        return trials
    numbers = sorted(t.number for t in counted_trials(study))
    kept = []
    for trial in trials:
        if sum(n <= trial.number for n in numbers) > max_total_trials:
            trial.set_user_attr(OVER_CAP_ATTR, True)
            study.tell(trial, state=TrialState.FAIL)
        else:
            kept.append(trial)
    return kept


def check_failure_rate(study: optuna.Study, settings: SweepSettings) -> None:
    """Ends the search when more than max_failure_rate of its finished trials failed: judged once a few
    trials finished, so that one early failure does not end it."""
    done = finished_trials(study)
    failed = [t for t in done if t.state == TrialState.FAIL]
    if len(done) >= max(4, settings.n_jobs) and len(failed) / len(done) > settings.max_failure_rate:
        reasons = "; ".join(f"trial {t.number}: {t.user_attrs.get('fail_reason', '?')}" for t in failed[-3:])
        raise ConfigError(
            f"{len(failed)} of {len(done)} trials failed, above hydra.sweeper.max_failure_rate="
            f"{settings.max_failure_rate} ({reasons})"
        )
