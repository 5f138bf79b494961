"""A pruner for tests/cluster/test_lab_scale.py whose every decision names the trial that decided it: a trial
is pruned as soon as another trial of the study, whichever process runs it, reported more at the same
step. The study then shows whether a worker's pruning saw the other workers' reports."""

from __future__ import annotations

import optuna
from optuna.pruners import BasePruner

DECIDED_BY = "pruned_by"


class BelowAnotherTrial(BasePruner):
    def prune(self, study: optuna.Study, trial: optuna.trial.FrozenTrial) -> bool:
        step = trial.last_step
        if step is None:
            return False
        mine = trial.intermediate_values[step]
        for other in study.get_trials(deepcopy=False):
            if other.number != trial.number and other.intermediate_values.get(step, -float("inf")) > mine:
                study._storage.set_trial_user_attr(trial._trial_id, DECIDED_BY, other.number)
                return True
        return False
