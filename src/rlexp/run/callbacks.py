"""SB3 callbacks of a run: periodic evaluation keeping the best agent, checkpoints, user callbacks."""

from __future__ import annotations

import math
import shutil
from pathlib import Path
from typing import Any

import numpy as np
from hydra.utils import instantiate
from omegaconf import DictConfig
from stable_baselines3.common.callbacks import (
    BaseCallback,
    CallbackList,
    EvalCallback,
    StopTrainingOnRewardThreshold,
)
from stable_baselines3.common.vec_env import VecEnv

from rlexp.errors import ConfigError
from rlexp.run.diagnostics import FiniteTraining
from rlexp.run.envs import resolve_spec
from rlexp.run.saving import atomic_write_json, remove_partial_saves, replace_durably, save_agent_dir

BEST_DIR = "best"
BEST_FILE = "best.json"  # the evaluation that made best/ the best, next to its agent
CHECKPOINT_DIR = "checkpoints"


def best_record(rewards: Any, step: int) -> dict[str, Any]:
    """best.json (and summary.json's best_eval): the evaluation that made the best agent the best."""
    rewards = np.asarray(rewards)
    return {
        "mean": float(rewards.mean()),
        "std": float(rewards.std()),
        "episodes": int(rewards.size),
        "step": int(step),
    }


class SaveBestCallback(BaseCallback):
    """Run by EvalCallback on a new best mean reward: saves the agent atomically to ``save_dir``.

    (EvalCallback's own ``best_model_save_path`` overwrites the file in place and skips the
    normalization statistics.)
    """

    def __init__(self, save_dir: Path) -> None:
        super().__init__()
        self.save_dir = save_dir
        self.best: dict[str, Any] | None = None

    def _on_step(self) -> bool:
        assert isinstance(self.parent, EvalCallback)
        self.best = best_record(self.parent.evaluations_results[-1], self.num_timesteps)
        save_agent_dir(self.model, self.save_dir)
        atomic_write_json(self.save_dir / BEST_FILE, self.best)
        return True


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


class CheckpointCallback(BaseCallback):
    """Every ``save_freq`` env steps, at the next rollout boundary, a complete agent in
    ``checkpoints/step_<N>/``.

    At a rollout boundary model, statistics and buffer agree, so a run resumed from a checkpoint (after a
    SIGKILL) reaches the same total steps as one never stopped. Each checkpoint directory appears whole or
    not at all, unlike SB3's CheckpointCallback, which writes its files in place; ``keep_last`` bounds
    the disk used by long runs.
    """

    def __init__(
        self, save_dir: Path, save_freq: int, save_replay_buffer: bool = False, keep_last: int | None = None
    ) -> None:
        super().__init__()
        self.save_dir = save_dir
        self.save_freq = save_freq
        self.save_replay_buffer = save_replay_buffer
        self.keep_last = keep_last
        self._next_save = 0

    def _on_training_start(self) -> None:
        # num_timesteps is only known here: a continued agent starts past 0
        self._next_save = (self.model.num_timesteps // self.save_freq + 1) * self.save_freq
        if self.save_dir.is_dir():
            remove_partial_saves(self.save_dir)

    def _on_rollout_start(self) -> None:
        self._save_if_due()

    def _on_training_end(self) -> None:
        self._save_if_due()  # the last rollout too (learn() ended on its own, at a boundary)

    def _save_if_due(self) -> None:
        if self.num_timesteps >= self._next_save:
            self._next_save = (self.num_timesteps // self.save_freq + 1) * self.save_freq
            save_agent_dir(self.model, self.save_dir / f"step_{self.num_timesteps:012d}", self.save_replay_buffer)
            if self.keep_last:
                for old in sorted(self.save_dir.glob("step_*"))[: -self.keep_last]:
                    shutil.rmtree(old, ignore_errors=True)

    def _on_step(self) -> bool:
        return True


class RunEvalCallback(EvalCallback):
    """SB3's EvalCallback as a run needs it: a stop signal abandons an evaluation under way, between two
    of its steps (rlexp.run.preemption.StopOnSignal: the run checkpoints its last trained state, counted
    at the rollout's start, and ends learn()); and evaluations.npz, which SB3 rewrites in place, is
    replaced whole, so that a kill never leaves it truncated."""

    def __init__(self, *args: Any, stopper: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.stopper = stopper
        self.npz: Path | None = None
        if self.log_path is not None:  # SB3 writes <log_path>.npz: a hidden temporary, renamed over the real one
            self.npz = Path(self.log_path + ".npz")
            self.log_path = str(self.npz.with_name(f".{self.npz.stem}.tmp"))

    def _log_success_callback(self, locals_: dict[str, Any], globals_: dict[str, Any]) -> None:
        super()._log_success_callback(locals_, globals_)
        self.stopper.check_evaluation()

    def _on_step(self) -> bool:
        from rlexp.run.preemption import StopEvaluation

        try:
            keep_going = super()._on_step()
        except StopEvaluation:
            self.stopper.save(self.stopper.rollout_step)
            return False
        written = Path(f"{self.log_path}.npz") if self.npz is not None else None
        if written is not None and written.is_file():
            replace_durably(written, self.npz)
        return keep_going


class StopWhenSolved(StopTrainingOnRewardThreshold):
    """SB3's stop on a reward threshold, run after each periodic evaluation (so its best mean is the one
    that counts, also when restored on resume); remembers the step it stopped at."""

    def __init__(self, reward_threshold: float) -> None:
        super().__init__(reward_threshold)
        self.stopped_at: int | None = None

    def _on_step(self) -> bool:
        keep_going = super()._on_step()
        if not keep_going:
            self.stopped_at = self.num_timesteps
        return keep_going


def stop_value(cfg: DictConfig) -> str | float | None:
    """callbacks.stop as given: "solved", a reward, or None; anything else refused in one line."""
    stop = cfg.callbacks.stop
    if isinstance(stop, DictConfig) and set(stop.keys()) == {"reward_threshold"}:
        stop = stop.reward_threshold
    if stop is None or stop == "solved":
        return stop
    if isinstance(stop, (int, float)) and not isinstance(stop, bool) and math.isfinite(stop):
        return float(stop)
    raise ConfigError(f"callbacks.stop={stop}: expected solved, a reward (a number) or null")


def stop_threshold(cfg: DictConfig) -> float | None:
    """The reward a periodic evaluation must reach to end training (callbacks.stop); None: never."""
    stop = stop_value(cfg)
    if stop is None or isinstance(stop, float):
        return stop
    if stop == "solved":
        threshold = cfg.env.reward_threshold
        if threshold is None:
            threshold = resolve_spec(cfg.env.id).reward_threshold
        if threshold is None:
            raise ConfigError(
                f"callbacks.stop=solved: {cfg.env.id} has no reward_threshold in its Gymnasium spec; give the "
                "reward to reach: callbacks.stop=<reward> (or env.reward_threshold=<reward>)"
            )
        return float(threshold)
    raise AssertionError(stop)  # (stop_value refused anything else)


def eval_freq(cfg: DictConfig) -> int:
    """Env steps (summed over envs) between periodic evaluations; 0: none."""
    eval_cfg = cfg.callbacks.eval
    return cfg.n_timesteps // eval_cfg.n_evaluations if eval_cfg.n_evaluations else eval_cfg.freq


def build_callbacks(
    cfg: DictConfig,
    run_dir: Path,
    eval_env: VecEnv | None,
    stopper: BaseCallback,
    after_eval: BaseCallback | None = None,
    solved: StopWhenSolved | None = None,
) -> tuple[CallbackList, SaveBestCallback | None]:
    """All callbacks of the run, and the one that records the best evaluation (if evaluating).

    ``after_eval`` runs after each periodic evaluation (a search's ReportToTrial), then ``solved``;
    ``stopper`` (the run's StopOnSignal) comes before the evaluations and may abandon one under way.
    """
    cb_cfg = cfg.callbacks
    # the finite check first: a diverged agent is never saved, not even as a checkpoint
    callbacks: list[BaseCallback] = [FiniteTraining()] if cfg.diagnostics.finite else []
    callbacks.append(stopper)
    save_best = None
    freq = eval_freq(cfg)
    if freq > 0 and eval_env is not None:
        save_best = SaveBestCallback(run_dir / BEST_DIR)
        after = [cb for cb in (after_eval, solved) if cb is not None]
        eval_cb = RunEvalCallback(
            eval_env,
            stopper=stopper,
            callback_on_new_best=save_best,
            callback_after_eval=after[0] if len(after) == 1 else CallbackList(after) if after else None,
            n_eval_episodes=cb_cfg.eval.n_episodes,
            eval_freq=max(freq // cfg.env.n_envs, 1),
            log_path=str(run_dir),  # evaluations.npz, as RL Zoo's plotting scripts expect
            deterministic=cb_cfg.eval.deterministic,
            verbose=int(cfg.logger.verbose >= 2),  # rlexp.run.progress says how the evaluations go
        )
        for cb in after:  # (EvalCallback makes itself the parent of its direct callback only)
            cb.parent = eval_cb
        callbacks.append(eval_cb)
    if cb_cfg.checkpoint.freq > 0:
        callbacks.append(
            CheckpointCallback(
                run_dir / CHECKPOINT_DIR,
                cb_cfg.checkpoint.freq,
                cb_cfg.checkpoint.save_replay_buffer,
                cb_cfg.checkpoint.keep_last,
            )
        )
    callbacks.extend(instantiate(spec) for spec in cb_cfg.extra.values())
    return CallbackList(callbacks), save_best
