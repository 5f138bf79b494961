"""Exceptions the command line reports in one line: bad config values, and runs stopped by a signal."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any


def one_line_error(err: BaseException) -> str:
    """``Type: message`` on one line, for errors of the libraries rlexp builds with."""
    return f"{type(err).__name__}: {' '.join(str(err).split())}"


class ConfigError(ValueError):
    """A bad value in the experiment config, reported without a traceback.

    The message names the offending key or value (and the valid choices where there are few).
    """


class Refused(BaseException):
    """The front door refused the command (``error`` says why) before anything was written.

    A BaseException because Hydra turns a callback's Exception into a warning and goes on.
    """

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


class Interrupted(BaseException):
    """Training stopped on a signal, after writing a resume checkpoint.

    A BaseException, like KeyboardInterrupt, so that a sweep stops instead of recording a failed job.
    """

    def __init__(self, signum: int, step: int, previous_handler: Any) -> None:
        super().__init__(f"stopped by {signal.Signals(signum).name} at step {step}")
        self.signum, self.step, self.previous_handler = signum, step, previous_handler
        # set by the manager: where the checkpoint is, and the job's command
        self.checkpoint: Path | None = None
        self.command: list[str] = ["rlexp"]
        # set by the command line: how to go on, when not by re-running the job in its run dir
        self.hint: str | None = None

    def forward(self) -> None:
        """Hands the signal on to the handler that was there before ours (e.g. submitit's, which requeues
        the SLURM job and exits). Python's default handlers are left out: we stop on our own."""
        handler = self.previous_handler
        if callable(handler) and handler is not signal.default_int_handler:
            handler(self.signum, None)
