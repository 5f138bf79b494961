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
