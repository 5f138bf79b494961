"""Env wrappers that tuned configs name and no library ships in the same form."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, SupportsFloat

import gymnasium as gym


class ResizeObservation(gym.wrappers.ResizeObservation):
    """Gymnasium's ResizeObservation with the shape as a config writes it (a list; Gymnasium takes a tuple)."""

    def __init__(self, env: gym.Env, shape: Sequence[int]) -> None:
        super().__init__(env, (int(shape[0]), int(shape[1])))


class FrameSkip(gym.Wrapper):
    """Repeats each action ``skip`` times, summing the rewards and returning the last observation (RL Zoo's
    FrameSkip; unlike gymnasium's MaxAndSkipObservation it does not max-pool frames, which CarRacing's values
    were tuned without). Stops early when an episode ends within the skipped steps."""

    def __init__(self, env: gym.Env, skip: int = 4) -> None:
        super().__init__(env)
        if skip < 1:
            raise ValueError(f"skip must be >= 1, got {skip}")
        self.skip = skip

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        total = 0.0
        obs, reward, terminated, truncated, info = self.env.step(action)
        total += float(reward)
        for _ in range(self.skip - 1):
            if terminated or truncated:
                break
            obs, reward, terminated, truncated, info = self.env.step(action)
            total += float(reward)
        return obs, total, terminated, truncated, info


class SeededResets(gym.Wrapper):
    """Every reset seeded, from the first seed an env is given: for envs that draw a fresh generator from the
    OS at each unseeded reset (panda-gym 3's ``seeding.np_random(None)``, which picks each episode's goal), so
    that a run is the same run again with the same seed. SB3's vector envs seed only the first reset."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self._seeds: Any = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        import numpy as np

        if seed is not None:
            self._seeds = np.random.default_rng(seed)
        elif self._seeds is not None:
            seed = int(self._seeds.integers(2**31 - 1))
        return self.env.reset(seed=seed, options=options)


class ZeroedObservations(gym.ObservationWrapper):
    """Observation values ``first`` to ``stop - 1`` set to 0: the env as an agent trained where they were always
    0 saw it (mujoco-py >= 2 left Ant-v3's and Humanoid-v3's contact forces at 0; MuJoCo's -v4 computes them)."""

    def __init__(self, env: gym.Env, first: int, stop: int) -> None:
        super().__init__(env)
        self.first, self.stop = int(first), int(stop)

    def observation(self, observation: Any) -> Any:
        observation = observation.copy()
        observation[self.first : self.stop] = 0
        return observation
