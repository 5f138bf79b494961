"""Stopping a run on a signal with a resume checkpoint, and continuing it later in the same run dir.

SLURM sends SIGTERM on preemption and (through submitit's ``--signal``) SIGUSR2 before the time
limit; a user sends SIGINT (Ctrl-C) or SIGTERM (kill). In each case training stops at the next
rollout boundary, where the model, its normalization statistics and replay buffer are consistent,
and a complete agent goes to ``run_dir/resume/``. Re-running the job in that run dir (SLURM's
requeue does) continues from there to the run's original total step count. A run whose process
died without saving (SIGKILL, node failure) continues from its newest periodic checkpoint.
"""

from __future__ import annotations

import os
import signal
import threading
import types
from pathlib import Path
from typing import Any

from stable_baselines3.common.callbacks import BaseCallback

from rlexp.errors import Interrupted
from rlexp.rundir.agents import save_agent_dir
from rlexp.rundir.contract import RESUME_DIR


def _stop_signals() -> list[signal.Signals]:
    # submitit's pre-timeout signal is USR2 unless SUBMITIT_PREEMPT_SIGNAL names another
    usr = getattr(signal, "SIG" + os.environ.get("SUBMITIT_PREEMPT_SIGNAL", "USR2"), signal.SIGUSR2)
    return list(dict.fromkeys([signal.SIGTERM, signal.SIGINT, usr]))


class StopEvaluation(BaseException):
    """Raised between two steps of an evaluation when a stop signal has come: the evaluation is abandoned
    rather than waited for (an episode may last for ever). A BaseException, so that no library code
    swallows it."""


class StopTraining(BaseException):
    """Ends learn() once the resume checkpoint is saved (ARS, for one, ignores a callback's False)."""


class StopOnSignal(BaseCallback):
    """Catches the stop signals for a whole run (``install``/``restore`` around it) and turns them into
    a checkpoint and a clean end of learn().

    The handler only records the signal; the run acts on it at safe points. Training stops at the next
    rollout boundary, where model, statistics and buffer agree; a signal before training begins stops at
    the first rollout (a checkpoint of the untrained agent). An evaluation under way, periodic or final,
    is abandoned between two of its steps (``check_evaluation``). A second Ctrl-C interrupts at once,
    without a checkpoint.
    """

    def __init__(self, run_dir: Path) -> None:
        super().__init__()
        self.run_dir = run_dir
        self.signum: int | None = None
        self.saved_at: int | None = None
        self.rollout_step = 0  # num_timesteps when the latest rollout began
        self._previous: dict[int, Any] = {}

    def install(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return  # Python only lets the main thread handle signals
        for sig in _stop_signals():
            self._previous[sig] = signal.signal(sig, self._handle)

    def restore(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)

    def _handle(self, signum: int, frame: types.FrameType | None) -> None:
        if self.signum == signal.SIGINT and signum == signal.SIGINT:
            raise KeyboardInterrupt
        self.signum = signum

    def check_evaluation(self, *_: Any) -> None:
        """evaluate_policy's per-step callback: abandons the evaluation once a stop signal has come."""
        if self.signum is not None:
            raise StopEvaluation

    def _on_rollout_start(self) -> None:
        self.rollout_step = self.num_timesteps
        # the previous rollout has been trained on: model, statistics and buffer agree here
        if self.signum is not None and self.saved_at is None:
            self.save(self.num_timesteps)

    def save(self, step: int) -> None:
        """The resume checkpoint, counted at ``step``: the latest rollout start when a periodic evaluation
        was abandoned mid-rollout (that rollout's steps run again on resume; an off-policy buffer keeps
        their transitions and the normalization statistics have seen them), the final step when the final
        evaluation was."""
        now = self.model.num_timesteps
        self.model.num_timesteps = step
        try:  # with its replay buffer (save_agent skips it for on-policy algorithms)
            save_agent_dir(self.model, self.run_dir / RESUME_DIR, replay_buffer=True)
        finally:
            self.model.num_timesteps = now
        self.saved_at = step

    def _on_step(self) -> bool:
        if self.saved_at is not None:
            raise StopTraining
        return True

    def after_completion(self, run_dir: Path, result: float) -> Interrupted | None:
        """A stop signal that came once training and evaluation were over, when the run completed anyway;
        None when there was none, or when the handler before ours takes over (submitit's: the job is done
        and returns its result)."""
        if self.signum is None or Interrupted.forwards_to(self._previous.get(self.signum)):
            return None
        return Interrupted(self.signum, self.num_timesteps, self._previous.get(self.signum), result, run_dir)

    def interrupted(self) -> Interrupted | None:
        if self.saved_at is None:
            return None
        assert self.signum is not None
        return Interrupted(self.signum, self.saved_at, self._previous.get(self.signum))
