"""Optuna's private names that the search reads, in one place, each with why: a trial's storage id and a
study's storage, which Optuna uses internally and offers no public way to reach. No other module of rlexp or
its plugins reads one (tests/test_architecture.py); an Optuna release that renames them breaks here alone."""

from __future__ import annotations

from typing import Any

import optuna
from optuna.storages import BaseStorage
from optuna.trial import FrozenTrial


def _storage(study: optuna.Study) -> BaseStorage:
    return study._storage


def study_storage(study: optuna.Study) -> BaseStorage:
    """The storage a study reads and writes (``_storage``, with Optuna's cache): the jobs of a sweep that run
    in its sweeper's process share it (rlexp.search.study.jobs_reach)."""
    return _storage(study)


def trial_id(trial: optuna.Trial | FrozenTrial) -> int:
    """A trial's id in the storage (``_trial_id``): the one handle by which a job rebuilds its live trial
    (``optuna.trial.Trial(study, trial_id)``: rlexp.search.study.job_trial) and a study's trial is written to."""
    return trial._trial_id


def stored_trial(study: optuna.Study, trial: optuna.Trial) -> FrozenTrial:
    """A live trial as the storage holds it now (its user attributes as set), without reading the whole study."""
    return _storage(study).get_trial(trial_id(trial))


def trial_numbered(study: optuna.Study, number: int) -> FrozenTrial:
    """The study's trial ``number`` (``_study_id``), without reading the study's thousands of trials
    (``study.trials[number]`` copies them all)."""
    storage = _storage(study)
    return storage.get_trial(storage.get_trial_id_from_study_id_trial_number(study._study_id, number))


def set_trial_user_attr(study: optuna.Study, trial: FrozenTrial, key: str, value: Any) -> None:
    """A user attribute set on a trial that another process ran: Optuna sets them through a live ``Trial``
    only, which a sweeper reclaiming a lost trial does not hold."""
    _storage(study).set_trial_user_attr(trial_id(trial), key, value)
