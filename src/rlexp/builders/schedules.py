"""Schedules for learning rate and clip range, selected by the `schedule/` config group.

Each factory takes the configured initial value and returns a callable of SB3's
``progress_remaining`` (1 at the start of training, 0 at the end). They are module-level classes so
that SB3 can pickle them into the saved model.
"""

from __future__ import annotations

import math
from typing import Any

from stable_baselines3.common.utils import ConstantSchedule

from rlexp.errors import ConfigError

CONSTANT = f"{__name__}.constant"  # the _target_ of a constant schedule (schedule/constant.yaml)


def constant(initial: float) -> ConstantSchedule:
    return ConstantSchedule(initial)


def linear(initial: float, final_fraction: float = 0.0) -> LinearSchedule:
    """RL Zoo's ``lin_<value>``: from ``initial`` down to ``final_fraction * initial``."""
    return LinearSchedule(initial, initial * final_fraction)


class LinearSchedule:
    """``final + progress_remaining * (initial - final)``: with ``final`` 0 (RL Zoo's ``lin_``), the very float
    arithmetic of the zoo's ``progress_remaining * initial``, so that rlexp trains the zoo's weights bit for bit
    (SB3's ``LinearSchedule`` rounds otherwise once progress falls below 1; benchmarks/zoo_parity.py). Like the
    zoo's, it is not clamped: the last rollout, which overshoots the budget, sees a slightly negative value."""

    def __init__(self, initial: float, final: float = 0.0) -> None:
        self.initial = float(initial)
        self.final = float(final)

    def __setstate__(self, state: dict[str, Any]) -> None:
        if "initial_value" in state:  # RL Zoo's SimpleLinearSchedule, pickled in a zoo run's model
            state = {"initial": float(state["initial_value"]), "final": 0.0}
        self.__dict__.update(state)

    def __call__(self, progress_remaining: float) -> float:
        if self.final == 0.0:
            return progress_remaining * self.initial
        return self.final + progress_remaining * (self.initial - self.final)

    def __repr__(self) -> str:
        return f"LinearSchedule(initial={self.initial}, final={self.final})"


class CosineSchedule:
    """Cosine annealing from ``initial`` to ``final_fraction * initial``."""

    def __init__(self, initial: float, final_fraction: float = 0.0) -> None:
        self.initial = initial
        self.final = initial * final_fraction

    def __call__(self, progress_remaining: float) -> float:
        done = 1.0 - progress_remaining
        return self.final + 0.5 * (self.initial - self.final) * (1.0 + math.cos(math.pi * done))

    def __repr__(self) -> str:
        return f"CosineSchedule(initial={self.initial}, final={self.final})"


class ExponentialSchedule:
    """``initial * decay ** progress``: reaches ``decay * initial`` at the end of training."""

    def __init__(self, initial: float, decay: float = 0.1) -> None:
        if not 0.0 < decay <= 1.0:
            raise ConfigError(f"exponential schedule: decay must be in (0, 1], got {decay}")
        self.initial = initial
        self.decay = decay

    def __call__(self, progress_remaining: float) -> float:
        return self.initial * self.decay ** (1.0 - progress_remaining)

    def __repr__(self) -> str:
        return f"ExponentialSchedule(initial={self.initial}, decay={self.decay})"
