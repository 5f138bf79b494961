"""An env whose close sends SIGTERM to its own process: a stop signal as a run completes (copied into a
test's working dir as late.py: env.id=late:LateSignalEnv)."""

import os
import signal

import gymnasium as gym
import numpy as np


class LateSignalEnv(gym.Env):
    """Episodes of 10 steps; with kill_on_close, an env that has been stepped sends SIGTERM to its own
    process when it closes: after the final evaluation, before the run records itself completed."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, kill_on_close=False):
        self.kill_on_close, self.steps, self.stepped = kill_on_close, 0, False

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.steps = 0
        return np.zeros(2, np.float32), {}

    def step(self, action):
        self.steps += 1
        self.stepped = True
        return np.zeros(2, np.float32), 1.0, self.steps >= 10, False, {}

    def close(self):
        if self.kill_on_close and self.stepped:
            os.kill(os.getpid(), signal.SIGTERM)
