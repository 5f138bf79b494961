"""Stopping a run on a signal with a resume checkpoint, and continuing it later in the same run dir.

SLURM sends SIGTERM on preemption and (through submitit's ``--signal``) SIGUSR2 before the time
limit; a user sends SIGINT (Ctrl-C) or SIGTERM (kill). In each case training stops at the next
rollout boundary, where the model, its normalization statistics and replay buffer are consistent,
and a complete agent goes to ``run_dir/resume/``. Re-running the job in that run dir (SLURM's
requeue does) continues from there to the run's original total step count. A run whose process
died without saving (SIGKILL, node failure) continues from its newest periodic checkpoint.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import threading
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from omegaconf import DictConfig
from stable_baselines3.common.callbacks import BaseCallback, EvalCallback
from stable_baselines3.common.logger import (
    CSVOutputFormat,
    HumanOutputFormat,
    JSONOutputFormat,
    KVWriter,
    Logger,
    make_output_format,
)

from rlexp.errors import Interrupted, one_line_error
from rlexp.run import lock
from rlexp.run.callbacks import BEST_DIR, BEST_FILE, CHECKPOINT_DIR, ReportToTrial, SaveBestCallback, best_record
from rlexp.run.saving import MODEL_FILE, atomic_write_json, damage, save_agent_dir

log = logging.getLogger(__name__)
RESUME_DIR = "resume"
RESUMABLE = "interrupted"  # summary.json status of a run stopped by a signal with a resume checkpoint


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


@dataclass
class ResumePoint:
    """A saved agent of the run to continue from, and the step it was saved at."""

    path: Path
    step: int


def resume_point(run_dir: Path, summary: dict[str, Any], warn: bool = False) -> ResumePoint | None:
    """Where to continue the run in ``run_dir``: the agent saved on a signal; for an abandoned run, the
    newest of its checkpoints. A damaged agent is passed over for the next newest (``warn``: saying so);
    None when none is left (the run starts over)."""
    resume = run_dir / RESUME_DIR
    found = []
    if summary.get("status") == RESUMABLE:
        found.append(ResumePoint(resume, int(summary["steps_done"])))
    elif not lock.abandoned(summary, run_dir):
        return None
    elif summary.get("resumed"):  # saved before the last resumption
        found.append(ResumePoint(resume, int(summary["resumed"][-1]["step"])))
    found += [ResumePoint(d, int(d.name.removeprefix("step_"))) for d in (run_dir / CHECKPOINT_DIR).glob("step_*")]
    for point in sorted(found, key=lambda point: point.step, reverse=True):
        if not (point.path / MODEL_FILE).is_file():
            continue
        damaged = damage(point.path)
        if damaged is None:
            return point
        if warn:
            log.warning("%s; passing over the agent saved at step %d", damaged, point.step)
    return None


def set_aside(run_dir: Path) -> Path:
    """Moves what an abandoned run without a checkpoint wrote into a hidden ``.abandoned_<n>/`` of its
    run dir, so that it can start over there (Hydra's .hydra/ and job log stay: they are the new job's)."""
    n = 1 + len(list(run_dir.glob(".abandoned_*")))
    aside = run_dir / f".abandoned_{n}"
    aside.mkdir()
    for path in run_dir.iterdir():
        if not path.name.startswith(".") and path.suffix != ".log":
            path.rename(aside / path.name)
    return aside


class ContinuedCSVOutputFormat(CSVOutputFormat):
    """SB3's progress.csv writer, continuing the file of the run's earlier part instead of truncating it
    (rows logged after the resume step, by a part that died without a checkpoint there, are dropped)."""

    def __init__(self, filename: str, upto_step: int) -> None:
        self.file = open(filename, "r+" if os.path.isfile(filename) else "w+")  # noqa: SIM115 (closed by Logger)
        lines = self.file.readlines()
        self.keys = lines[0].strip().split(",") if lines else []
        if "time/total_timesteps" in self.keys:
            col = self.keys.index("time/total_timesteps")
            kept = [line for line in lines[1:] if _step_of(line, col) <= upto_step]
            if len(kept) < len(lines) - 1:
                self.file.seek(0)
                self.file.writelines([lines[0], *kept])
                self.file.truncate()
        self.file.seek(0, os.SEEK_END)
        self.separator, self.quotechar = ",", '"'


def _step_of(line: str, col: int) -> float:
    try:
        return float(line.split(",")[col])
    except (IndexError, ValueError):
        return 0.0


class _AppendingJSONOutputFormat(JSONOutputFormat):
    def __init__(self, filename: str) -> None:
        self.file = open(filename, "a")  # noqa: SIM115 (closed by Logger)


def continued_logger(folder: Path, formats: list[str], upto_step: int) -> Logger:
    """A logger for a resumed run: progress.csv, log.txt and progress.json grow; TensorBoard adds an
    events file whose steps continue where the earlier part stopped."""
    folder.mkdir(parents=True, exist_ok=True)
    outputs: list[KVWriter] = []
    for f in formats:
        if f == "csv":
            outputs.append(ContinuedCSVOutputFormat(str(folder / "progress.csv"), upto_step))
        elif f == "log":
            outputs.append(HumanOutputFormat(open(folder / "log.txt", "a")))  # noqa: SIM115 (closed by Logger)
        elif f == "json":
            outputs.append(_AppendingJSONOutputFormat(str(folder / "progress.json")))
        else:
            outputs.append(make_output_format(f, str(folder)))
    return Logger(str(folder), outputs)


def _read_evaluations(npz: Path) -> dict[str, np.ndarray] | None:
    """Every member of evaluations.npz, read in full (NpzFile reads lazily: a damaged member would fail
    half-way through a restore); an unreadable file is set aside as ``evaluations.npz.damaged``."""
    if not npz.is_file():
        return None
    try:
        with np.load(npz) as data:
            return {name: data[name] for name in data.files}
    except Exception as err:  # written atomically: a copy or a disk at fault (BadZipFile, zlib.error, ...)
        aside = npz.with_name(npz.name + ".damaged")
        npz.replace(aside)
        log.warning(
            "%s is unreadable (%s); moved to %s, the resumed run's evaluations start afresh",
            npz,
            one_line_error(err),
            aside,
        )
        return None


def restore_evaluations(
    eval_cb: EvalCallback, data: dict[str, np.ndarray] | None, n_calls: int, upto_step: int
) -> None:
    """Carries the earlier part's evaluations (up to the resume step) into the resumed EvalCallback:
    evaluations.npz keeps them and the schedule stays on the same steps."""
    if data is not None and {"timesteps", "results", "ep_lengths"} <= data.keys():
        keep = [i for i, t in enumerate(data["timesteps"]) if t <= upto_step]
        eval_cb.evaluations_timesteps = [data["timesteps"][i] for i in keep]
        eval_cb.evaluations_results = [list(data["results"][i]) for i in keep]
        eval_cb.evaluations_length = [list(data["ep_lengths"][i]) for i in keep]
        if "successes" in data:
            eval_cb.evaluations_successes = [list(data["successes"][i]) for i in keep]
    eval_cb.n_calls = n_calls  # env steps / n_envs since the run started: evaluations stay on their steps


def restore_evaluation_state(
    cfg: DictConfig,
    run_dir: Path,
    summary: dict[str, Any],
    resume: ResumePoint,
    step: int,
    save_best: SaveBestCallback,
    reporter: ReportToTrial | None,
) -> None:
    """A resumed run's evaluations go on as one series: same schedule, same best, same trial reports."""
    eval_cb = save_best.parent
    data = _read_evaluations(run_dir / "evaluations.npz")
    restore_evaluations(eval_cb, data, (step - summary["start_step"]) // cfg.env.n_envs, upto_step=resume.step)
    # best/ holds it (its best.json is there even when the run died before updating summary.json)
    recorded = run_dir / BEST_DIR / BEST_FILE
    save_best.best = _recorded_best(recorded) if recorded.is_file() else None
    if save_best.best is None and recorded.is_file():  # unreadable: rebuilt and written again
        save_best.best = _best_of(data) or summary.get("best_eval")
        if save_best.best is not None:
            atomic_write_json(recorded, save_best.best)
    elif save_best.best is None:
        save_best.best = summary.get("best_eval")
    if save_best.best is not None:
        eval_cb.best_mean_reward = float(save_best.best["mean"])
    if reporter is not None:  # the trial's reports go on from the evaluations already reported
        reporter.values = [float(np.mean(r)) for r in eval_cb.evaluations_results]


def _recorded_best(path: Path) -> dict[str, Any] | None:
    try:
        best = json.loads(path.read_text())
        float(best["mean"])
        return best
    except (OSError, ValueError, TypeError, KeyError) as err:
        log.warning("%s is unreadable (%s); the best so far is taken from the evaluations", path, one_line_error(err))
        return None


def _best_of(data: dict[str, np.ndarray] | None) -> dict[str, Any] | None:
    """The evaluation that made best/ the best: the first of the highest means of all evaluations, also
    those a killed part made after the resume step (best/ may hold its agent)."""
    if data is None or len(data.get("results", ())) == 0:
        return None
    i = int(np.argmax(data["results"].mean(axis=1)))
    return best_record(data["results"][i], int(data["timesteps"][i]))
