"""SB3's logger output to a tracker: the scalars it takes, guarded, so that a tracker never fails a run."""

from __future__ import annotations

import logging
from typing import Any

from stable_baselines3.common.logger import KVWriter

log = logging.getLogger(__name__)


class GuardedWriter(KVWriter):
    """A tracker's KVWriter whose first failure is a warning and ends its writing, never the run's."""

    def __init__(self, writer: KVWriter, name: str) -> None:
        self.writer, self.name, self.failed = writer, name, False

    def write(self, key_values: dict[str, Any], key_excluded: dict[str, Any], step: int = 0) -> None:
        if self.failed:
            return
        try:
            self.writer.write(key_values, key_excluded, step)
        except Exception as err:
            self.failed = True
            log.warning(
                "logger.%s: could not log scalars at step %d, no more are sent: %s: %s",
                self.name,
                step,
                type(err).__name__,
                err,
            )

    def close(self) -> None:
        self.writer.close()


def scalars(key_values: dict[str, Any], key_excluded: dict[str, tuple[str, ...] | None], name: str) -> dict[str, float]:
    """The numbers of one SB3 log dump that the tracker ``name`` takes (strings, videos, figures left out)."""
    import numpy as np

    out = {}
    for key, value in key_values.items():
        if name in (key_excluded.get(key) or ()):
            continue
        if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
            out[key] = float(value)
    return out
