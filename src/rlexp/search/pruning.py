"""Pruning a search's trial: each periodic evaluation is reported to the Optuna trial, whose pruner may end
it (the run then stops as pruned, and the sweeper records it so)."""

from __future__ import annotations

from typing import Any

import numpy as np
import optuna
from stable_baselines3.common.callbacks import BaseCallback, EvalCallback


class ReportToTrial(BaseCallback):
    """Run by EvalCallback after each evaluation inside a search: reports the mean reward to the
    Optuna trial and stops training when the pruner says so (the manager then raises TrialPruned).

    With several seeds per trial the seeds train one after another; ``earlier`` holds the evaluations
    of the seeds already done, and each seed reports ``per_seed`` evaluations (the configured count;
    rollouts overshooting the budget may add some, which are not reported). The i-th evaluation of
    seed j is reported at step j * per_seed + i, as the mean of the i-th evaluations of seeds 0..j:
    trials are compared at equal effort, a weak trial is pruned on its first seed, and a lucky first
    seed can still be pruned later.
    """

    def __init__(self, trial: Any, earlier: list[list[float]] | None = None, per_seed: int | None = None) -> None:
        super().__init__()
        self.trial = trial
        self.earlier = earlier or []
        self.per_seed = per_seed
        self.values: list[float] = []
        self.pruned_at: int | None = None

    def _on_step(self) -> bool:
        assert isinstance(self.parent, EvalCallback)
        self.values.append(float(self.parent.last_mean_reward))
        i = len(self.values)
        if self.per_seed is not None and i > self.per_seed:
            return True  # past the configured count (a long rollout overshot): not comparable across trials
        same_index = [seed[i - 1] for seed in self.earlier if len(seed) >= i] + [self.values[-1]]
        # the step counts evaluations, so that pruners compare trials with different n_envs alike
        offset = len(self.earlier) * self.per_seed if self.per_seed else sum(len(seed) for seed in self.earlier)
        step = offset + i
        self.trial.report(float(np.mean(same_index)), step)
        if self.trial.should_prune():
            self.pruned_at = self.num_timesteps
            return False
        return True


def pruned(reporter: ReportToTrial | None) -> optuna.TrialPruned | None:
    """The TrialPruned a run raises once its trial's pruner stopped it (None: not pruned)."""
    if reporter is None or reporter.pruned_at is None:
        return None
    return optuna.TrialPruned(f"trial {reporter.trial.number} pruned at step {reporter.pruned_at}")
