"""Stopping a run on a signal with a resume checkpoint, and continuing it later in the same run dir.

SLURM sends SIGTERM on preemption and (through submitit's ``--signal``) SIGUSR2 before the time
limit; a user sends SIGINT (Ctrl-C) or SIGTERM (kill). In each case training stops at the next
rollout boundary, where the model, its normalization statistics and replay buffer are consistent,
and a complete agent goes to ``run_dir/resume/``. Re-running the job in that run dir (SLURM's
requeue does) continues from there to the run's original total step count.
"""

from __future__ import annotations

import os
import signal
import threading
import types
from pathlib import Path
from typing import Any

import numpy as np
from stable_baselines3.common.callbacks import BaseCallback, EvalCallback
from stable_baselines3.common.logger import CSVOutputFormat, Logger, make_output_format
from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm

from rlexp.errors import Interrupted
from rlexp.saving import save_agent_dir

RESUME_DIR = "resume"
RESUMABLE = "interrupted"  # summary.json status of a run stopped by a signal with a resume checkpoint


def _stop_signals() -> list[signal.Signals]:
    # submitit's pre-timeout signal is USR2 unless SUBMITIT_PREEMPT_SIGNAL names another
    usr = getattr(signal, "SIG" + os.environ.get("SUBMITIT_PREEMPT_SIGNAL", "USR2"), signal.SIGUSR2)
    return list(dict.fromkeys([signal.SIGTERM, signal.SIGINT, usr]))


class StopOnSignal(BaseCallback):
    """Turns the stop signals into a checkpoint at the next rollout boundary and a clean end of learn().

    A second Ctrl-C interrupts at once (without a checkpoint).
    """

    def __init__(self, run_dir: Path, save_replay_buffer: bool) -> None:
        super().__init__()
        self.run_dir = run_dir
        self.save_replay_buffer = save_replay_buffer
        self.signum: int | None = None
        self.saved_at: int | None = None
        self._previous: dict[int, Any] = {}

    def _on_training_start(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return  # Python only lets the main thread handle signals
        for sig in _stop_signals():
            self._previous[sig] = signal.signal(sig, self._handle)

    def _handle(self, signum: int, frame: types.FrameType | None) -> None:
        if self.signum == signal.SIGINT and signum == signal.SIGINT:
            raise KeyboardInterrupt
        self.signum = signum

    def _on_rollout_start(self) -> None:
        # the previous rollout has been trained on: model, statistics and buffer agree here
        if self.signum is not None and self.saved_at is None:
            save_agent_dir(self.model, self.run_dir / RESUME_DIR, self.save_replay_buffer)
            self.saved_at = self.num_timesteps

    def _on_step(self) -> bool:
        return self.saved_at is None

    def _on_training_end(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)

    def interrupted(self) -> Interrupted | None:
        if self.saved_at is None:
            return None
        assert self.signum is not None
        return Interrupted(self.signum, self.saved_at, self._previous.get(self.signum))


def resume_source(run_dir: Path, summary: dict[str, Any]) -> Path | None:
    """The checkpoint to continue a run dir from, if the run there was stopped by a signal."""
    model = run_dir / RESUME_DIR / "model.zip"
    return model.parent if summary.get("status") == RESUMABLE and model.is_file() else None


def saves_replay_buffer(model: Any) -> bool:
    return isinstance(model, OffPolicyAlgorithm)


class ContinuedCSVOutputFormat(CSVOutputFormat):
    """SB3's progress.csv writer, appending to the file of the run's earlier part instead of truncating it."""

    def __init__(self, filename: str) -> None:
        self.file = open(filename, "r+" if os.path.isfile(filename) else "w+")  # noqa: SIM115 (closed by Logger)
        header = self.file.readline().strip()
        self.keys = header.split(",") if header else []
        self.file.seek(0, os.SEEK_END)
        self.separator, self.quotechar = ",", '"'


def continued_logger(folder: Path, formats: list[str]) -> Logger:
    """A logger for a resumed run: progress.csv grows; TensorBoard adds an events file whose steps
    continue where the earlier part stopped."""
    folder.mkdir(parents=True, exist_ok=True)
    outputs = [
        ContinuedCSVOutputFormat(str(folder / "progress.csv")) if f == "csv" else make_output_format(f, str(folder))
        for f in formats
    ]
    return Logger(str(folder), outputs)


def restore_evaluations(eval_cb: EvalCallback, run_dir: Path, n_calls: int, best: dict[str, Any] | None) -> None:
    """Carries the earlier part's evaluations into the resumed EvalCallback: evaluations.npz keeps
    them, the schedule stays on the same steps, and a worse agent does not replace best/."""
    npz = run_dir / "evaluations.npz"
    if npz.is_file():
        with np.load(npz) as data:
            eval_cb.evaluations_timesteps = list(data["timesteps"])
            eval_cb.evaluations_results = [list(r) for r in data["results"]]
            eval_cb.evaluations_length = [list(r) for r in data["ep_lengths"]]
    eval_cb.n_calls = n_calls  # env steps / n_envs since the run started: evaluations stay on their steps
    if best is not None:
        eval_cb.best_mean_reward = float(best["mean"])
