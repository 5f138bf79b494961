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
