"""The Python warnings of the libraries a run builds with (SB3's, Gymnasium's, torch's), said as the run's
own: logged once each (the console and RUN/rlexp.log) and kept in summary.json's ``warnings``, which the
command repeats above a run's last line."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from rlexp.errors import warning_line

if TYPE_CHECKING:
    from rlexp.rundir.record import RunRecord

log = logging.getLogger(__name__)


@contextmanager
def recorded_warnings(record: RunRecord) -> Iterator[None]:
    """While the run trains: each new warning line goes to the log and to ``record.warnings``; a line the
    front door already found (its probe model raised it first) is not said twice."""
    shown = warnings.showwarning

    def record_it(message: Warning | str, category: type[Warning], filename: str, *args: Any, **kwargs: Any) -> None:
        line = warning_line(message, category, filename)
        if line not in record.warnings:
            record.warnings.append(line)
            log.warning(line)

    warnings.showwarning = record_it
    try:
        yield
    finally:
        warnings.showwarning = shown
