"""Exceptions the command line reports in one line: bad config values, and runs stopped by a signal."""

from __future__ import annotations

import re
import signal
from pathlib import Path
from typing import Any

_ANSI = re.compile(r"\x1b\[[0-9;]*m")  # (Gymnasium colours its warnings)


def collapsed(text: object) -> str:
    """Any text on one line, without terminal colours: a warning's or an error's lines would break the
    console's one line per message, and tables."""
    return " ".join(_ANSI.sub("", str(text)).split())


def warning_line(message: Warning | str, category: type[Warning], filename: str) -> str:
    """A Python warning (SB3's about a batch size, Gymnasium's about a space) on one line, with its category
    and the module that raised it: ``<message> (UserWarning, stable_baselines3.ppo.ppo)``."""
    source = filename.rsplit("site-packages/", 1)[-1].removesuffix(".py").replace("/", ".")
    return f"{collapsed(message)} ({category.__name__}, {source})"


def one_line_error(err: BaseException) -> str:
    """``Type: message`` on one line, for errors of the libraries rlexp builds with."""
    return f"{type(err).__name__}: {collapsed(err)}"


class ConfigError(ValueError):
    """A bad value in the experiment config, reported without a traceback.

    The message names the offending key or value (and the valid choices where there are few).
    """


class Diverged(RuntimeError):
    """Training met a NaN or inf (in the env's observations or rewards, the agent's actions, a logged
    loss or the policy's parameters): the run stops at once, its last checkpoint intact."""


class Refused(BaseException):
    """The front door refused the command (``error`` says why) before anything was written.

    A BaseException because Hydra turns a callback's Exception into a warning and goes on.
    """

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


class Stopped(BaseException):
    """A stop signal came to a command that waits on job processes of its own (a multirun's or a search's
    on local_parallel): its running jobs were sent SIGTERM (each checkpoints and ends) before it ended.

    A BaseException, like KeyboardInterrupt, so that no sweep records it as a failed job."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"stopped by {signal.Signals(signum).name}")
        self.signum = signum


class Interrupted(BaseException):
    """Training stopped on a signal, after writing a resume checkpoint; or a signal came just as the run
    completed (``completed``: its final mean reward), which ends a sweep before its next job.

    A BaseException, like KeyboardInterrupt, so that a sweep stops instead of recording a failed job.
    """

    def __init__(
        self, signum: int, step: int, previous_handler: Any, completed: float | None = None, run_dir: Path | None = None
    ) -> None:
        name = signal.Signals(signum).name
        super().__init__(
            f"stopped by {name} at step {step}"
            if completed is None
            else f"{name} came as the run in {run_dir} completed"
        )
        self.signum, self.step, self.previous_handler = signum, step, previous_handler
        self.completed = completed
        # set by the manager: where the checkpoint is, and the job's command
        self.checkpoint: Path | None = None
        self.command: list[str] = ["rlexp"]
        # set by the command line: how to go on, when not by re-running the job in its run dir
        self.hint: str | None = None

    @staticmethod
    def forwards_to(handler: Any) -> bool:
        """Whether ``handler`` (the one before ours) gets the signal: not Python's defaults, which would
        only stop the process that we stop on our own."""
        return callable(handler) and handler is not signal.default_int_handler

    def forward(self) -> None:
        """Hands the signal on to the handler that was there before ours (e.g. submitit's, which requeues
        the SLURM job and exits)."""
        if self.forwards_to(self.previous_handler):
            self.previous_handler(self.signum, None)
