"""An env that breaks its own contract, for the env-checker test (env.id=broken_envs:BadObservationEnv)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np


class BadObservationEnv(gym.Env):
    """Returns observations outside its own observation space: Gymnasium's checker must catch it."""

    observation_space = gym.spaces.Box(0.0, 1.0, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.full(2, 5.0, np.float32), {}

    def step(self, action):
        return np.full(2, 5.0, np.float32), 0.0, True, False, {}


class CrashingEnv(gym.Env):
    """Steps fine for a while, then raises: a failure after training started (env.id=broken_envs:CrashingEnv)."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, crash_at: int = 100):
        self.crash_at, self.steps = crash_at, 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(2, np.float32), {}

    def step(self, action):
        self.steps += 1
        if self.steps >= self.crash_at:
            raise RuntimeError(f"crashed at step {self.steps}")
        return np.zeros(2, np.float32), 1.0, self.steps % 10 == 0, False, {}
