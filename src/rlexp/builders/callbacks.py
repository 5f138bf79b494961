"""The SB3 callbacks of a run, in the order they run: the finite check, the stop on a signal, periodic
evaluations keeping the best agent (then a search's pruning and the stop when solved), checkpoints, the
user's callbacks, progress and training health."""

from __future__ import annotations

import shutil
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stable_baselines3.common.callbacks import BaseCallback, CallbackList, EvalCallback
from stable_baselines3.common.vec_env import VecEnv

from rlexp.config.hydra_versions import instantiate
from rlexp.config.schema import CallbacksConfig, DiagnosticsConfig
from rlexp.files.atomic import remove_partial_saves, replace_durably
from rlexp.lifecycle.preemption import StopEvaluation, StopOnSignal
from rlexp.monitor.evaluation import eval_freq, training_rngs_untouched
from rlexp.monitor.finite import FiniteTraining
from rlexp.monitor.health import TrainingHealth
from rlexp.monitor.progress import Progress
from rlexp.monitor.solved import StopWhenSolved
from rlexp.rundir.agents import save_agent_dir
from rlexp.rundir.contract import (
    BEST_DIR,
    CHECKPOINT_DIR,
    EVALUATIONS_FILE,
    best_record,
    checkpoint_dir,
    checkpoint_steps,
    write_best,
)


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
        write_best(self.save_dir, self.best)
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
        self, run_dir: Path, save_freq: int, save_replay_buffer: bool = False, keep_last: int | None = None
    ) -> None:
        super().__init__()
        self.run_dir = run_dir
        self.save_dir = run_dir / CHECKPOINT_DIR
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
            save_agent_dir(self.model, checkpoint_dir(self.run_dir, self.num_timesteps), self.save_replay_buffer)
            if self.keep_last:
                for old in list(checkpoint_steps(self.run_dir).values())[: -self.keep_last]:
                    shutil.rmtree(old, ignore_errors=True)

    def _on_step(self) -> bool:
        return True


class RunEvalCallback(EvalCallback):
    """SB3's EvalCallback as a run needs it: a stop signal abandons an evaluation under way, between two
    of its steps (rlexp.lifecycle.preemption.StopOnSignal: the run checkpoints its last trained state, counted
    at the rollout's start, and ends learn()); and evaluations.npz, which SB3 rewrites in place, is
    replaced whole, so that a kill never leaves it truncated."""

    def __init__(self, *args: Any, stopper: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.stopper = stopper
        self.npz: Path | None = None
        if self.log_path is not None:  # SB3 writes <log_path>.npz: a hidden temporary, renamed over the real one
            self.npz = Path(self.log_path + ".npz")
            assert self.npz.name == EVALUATIONS_FILE, self.npz
            self.log_path = str(self.npz.with_name(f".{self.npz.stem}.tmp"))

    def _log_success_callback(self, locals_: dict[str, Any], globals_: dict[str, Any]) -> None:
        super()._log_success_callback(locals_, globals_)
        self.stopper.check_evaluation()

    def _on_step(self) -> bool:
        evaluated = self.eval_freq > 0 and self.n_calls % self.eval_freq == 0  # (as EvalCallback decides)
        try:
            # observing a run does not change what it learns (only on the steps that evaluate: no per-step cost)
            with training_rngs_untouched(self.model) if evaluated else nullcontext():
                keep_going = super()._on_step()
        except StopEvaluation:
            self.stopper.save(self.stopper.rollout_step)
            return False
        if evaluated and self.npz is not None:
            written = Path(f"{self.log_path}.npz")
            if written.is_file():
                replace_durably(written, self.npz)
        return keep_going


@dataclass
class RunCallbacks:
    """The callbacks of a run, and those the run asks after learn(): the best evaluation so far, whether it
    stopped when solved, the progress bar to close."""

    all: CallbackList
    save_best: SaveBestCallback | None
    solved: StopWhenSolved | None
    progress: Progress | None

    def best(self) -> dict[str, Any] | None:
        return self.save_best.best if self.save_best is not None else None


def build_callbacks(
    cb_cfg: CallbacksConfig,
    run_dir: Path,
    eval_env: VecEnv | None,
    stopper: StopOnSignal,
    target_steps: int,
    diagnostics: list[str],
    fresh: bool,
    after_eval: BaseCallback | None = None,
    threshold: float | None = None,
    origin: int = 0,
    *,
    diagnostics_cfg: DiagnosticsConfig,
    n_envs: int,
    verbose: int,
) -> RunCallbacks:
    """All callbacks of the run, as ``cb_cfg`` (callbacks), ``diagnostics_cfg`` (diagnostics), ``n_envs``
    (env.n_envs) and ``verbose`` (logger.verbose) say.

    ``stopper`` (the run's StopOnSignal) comes before the evaluations and may abandon one under way;
    ``after_eval`` runs after each periodic evaluation (a search's ReportToTrial), then the stop at
    ``threshold`` (callbacks.stop). ``target_steps``: the step count learn() stops at; ``diagnostics``:
    summary.json's list that training health adds to; ``fresh``: a new agent, trained from its first step;
    ``origin``: the step the run started from (a continued agent's, else 0), where its progress counts from.
    """
    # the finite check first: a diverged agent is never saved, not even as a checkpoint
    callbacks: list[BaseCallback] = [FiniteTraining()] if diagnostics_cfg.finite else []
    callbacks.append(stopper)
    save_best = solved = eval_cb = None
    freq = eval_freq(cb_cfg.eval, target_steps - origin)
    if freq > 0 and eval_env is not None:
        save_best = SaveBestCallback(run_dir / BEST_DIR)
        solved = StopWhenSolved(threshold) if threshold is not None else None
        after = [cb for cb in (after_eval, solved) if cb is not None]
        eval_cb = RunEvalCallback(
            eval_env,
            stopper=stopper,
            callback_on_new_best=save_best,
            callback_after_eval=after[0] if len(after) == 1 else CallbackList(after) if after else None,
            n_eval_episodes=cb_cfg.eval.n_episodes,
            eval_freq=max(freq // n_envs, 1),
            log_path=str(run_dir),  # evaluations.npz, as RL Zoo's plotting scripts expect
            deterministic=cb_cfg.eval.deterministic,
            verbose=int(verbose >= 2),  # rlexp.monitor.progress says how the evaluations go
        )
        for cb in after:  # (EvalCallback makes itself the parent of its direct callback only)
            cb.parent = eval_cb
        callbacks.append(eval_cb)
    if cb_cfg.checkpoint.freq > 0:
        callbacks.append(
            CheckpointCallback(
                run_dir, cb_cfg.checkpoint.freq, cb_cfg.checkpoint.save_replay_buffer, cb_cfg.checkpoint.keep_last
            )
        )
    callbacks.extend(instantiate(spec) for spec in cb_cfg.extra.values())
    progress = None
    if verbose >= 1 and not cb_cfg.progress_bar:  # (SB3's own bar otherwise)
        progress = Progress(target_steps, eval_cb, origin=origin)
        callbacks.append(progress)
    callbacks.append(TrainingHealth(diagnostics_cfg, target_steps, diagnostics, fresh))
    return RunCallbacks(CallbackList(callbacks), save_best, solved, progress)
