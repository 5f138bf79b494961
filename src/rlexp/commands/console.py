"""What the command writes on the console: every line starts ``rlexp:``, as the command's own lines do,
whether it comes from rlexp's logging, Hydra's or a library's Python warning."""

from __future__ import annotations

import contextlib
import logging
import warnings
from typing import TextIO

from rlexp.errors import warning_line


class ConsoleFormatter(logging.Formatter):
    """``rlexp: <message>``, with ``warning:`` or ``error:`` before it at those levels (conf/hydra/job_logging
    and hydra_logging: the console handler's formatter; RUN/rlexp.log keeps time and source)."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        level = f"{record.levelname.lower()}: " if record.levelno >= logging.WARNING else ""
        return f"rlexp: {level}{record.message.strip()}"


_LEVELS = {"rlexp: warning: ": logging.WARNING, "rlexp: error: ": logging.ERROR, "rlexp: ": logging.INFO}
# (a run's own lines, as its other log lines: RUN/rlexp.log keeps what the console showed)
_log = logging.getLogger("rlexp.run")


def say(line: str) -> None:
    """One of the command's ``rlexp: [warning: ]...`` lines, logged at its level: on the console as written
    (warnings on stderr), and in the run's rlexp.log when a run's logging is set up."""
    prefix = next(p for p in _LEVELS if line.startswith(p))
    _log.log(_LEVELS[prefix], "%s", line.removeprefix(prefix))


class BelowWarning(logging.Filter):
    """Lets through the lines below WARNING: the console's stdout handler (warnings and errors go to stderr)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno < logging.WARNING


def show_warnings_on_one_line() -> None:
    """Python warnings (SB3's about a batch size, Gymnasium's about a space) said in one line each, as
    ``rlexp: warning: <message> (<category>, <module>)``, instead of their message, file and source line."""

    def show(
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: TextIO | None = None,
        line: str | None = None,
    ) -> None:
        text = f"rlexp: warning: {warning_line(message, category, filename)}\n"
        stream = file if file is not None else _stderr()
        with contextlib.suppress(OSError, AttributeError):  # no stream: lost, as Python's own would be
            stream.write(text)

    warnings.showwarning = show


def _stderr() -> TextIO:
    import sys

    return sys.stderr
