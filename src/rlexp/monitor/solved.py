"""Stopping when solved (callbacks.stop): training ends at the periodic evaluation whose mean reaches the
env's reward threshold (``solved``) or a given reward."""

from __future__ import annotations

import math
from collections.abc import Callable

from omegaconf import DictConfig
from stable_baselines3.common.callbacks import StopTrainingOnRewardThreshold

from rlexp.config.schema import CallbacksConfig, EnvConfig
from rlexp.errors import ConfigError


class StopWhenSolved(StopTrainingOnRewardThreshold):
    """SB3's stop on a reward threshold, run after each periodic evaluation (so its best mean is the one
    that counts, also when restored on resume); remembers the step it stopped at."""

    def __init__(self, reward_threshold: float) -> None:
        super().__init__(reward_threshold)
        self.stopped_at: int | None = None

    def _on_step(self) -> bool:
        keep_going = super()._on_step()
        if not keep_going:
            self.stopped_at = self.num_timesteps
        return keep_going


def stop_value(callbacks: CallbacksConfig) -> str | float | None:
    """callbacks.stop as given: "solved", a reward, or None; anything else refused in one line."""
    stop = callbacks.stop
    if isinstance(stop, DictConfig) and set(stop.keys()) == {"reward_threshold"}:
        stop = stop.reward_threshold
    if stop is None:
        return None
    if stop == "solved":
        return "solved"
    if isinstance(stop, (int, float)) and not isinstance(stop, bool) and math.isfinite(stop):
        return float(stop)
    raise ConfigError(f"callbacks.stop={stop}: expected solved, a reward (a number) or null")


def stop_threshold(
    callbacks: CallbacksConfig, env_cfg: EnvConfig, spec_threshold: Callable[[], float | None]
) -> float | None:
    """The reward a periodic evaluation must reach to end training (callbacks.stop); None: never.

    ``spec_threshold``: the reward_threshold of the env's Gymnasium spec (asked only for ``solved``
    without env.reward_threshold)."""
    stop = stop_value(callbacks)
    if stop is None or isinstance(stop, float):
        return stop
    if stop == "solved":
        threshold = env_cfg.reward_threshold
        if threshold is None:
            threshold = spec_threshold()
        if threshold is None:
            raise ConfigError(
                f"callbacks.stop=solved: {env_cfg.id} has no reward_threshold in its Gymnasium spec; give the "
                "reward to reach: callbacks.stop=<reward> (or env.reward_threshold=<reward>)"
            )
        return float(threshold)
    raise AssertionError(stop)  # (stop_value refused anything else)
