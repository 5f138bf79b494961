"""Gymnasium's NumPy-vectorized CartPole (``CartPoleVectorEnv``: all envs stepped in one array operation)
behind SB3's VecEnv, with SB3's semantics and DummyVecEnv's random streams.

CartPoleVectorEnv resets a finished env on the *next* step and draws every env's start state from one
generator; SB3 expects the reset observation on the same step (the terminal one in
``info["terminal_observation"]``) and env i seeded ``seed + i``. So this class resets finished envs itself,
each from its own generator seeded as DummyVecEnv seeds its env, drawing what ``CartPoleEnv.reset`` draws:
a run through it sees the same start states, and (CartPole's dynamics being the same float64 arithmetic)
the same observations, rewards and dones as one through DummyVecEnv (tests/vecenvs/test_vec_backends.py).
CartPole is the only env gymnasium 1.4 ships NumPy-vectorized (its phys2d ones need JAX)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, SupportsIndex

import gymnasium as gym
import numpy as np
from gymnasium.envs.classic_control.cartpole import CartPoleVectorEnv
from gymnasium.utils import seeding
from stable_baselines3.common.vec_env.base_vec_env import VecEnvObs, VecEnvStepReturn

from rlexp.vecenvs.batched import BatchedVecEnv
from rlexp.vecenvs.episodes import EpisodeStats

IDS = ("CartPole-v0", "CartPole-v1")  # gymnasium's ids whose vector_entry_point is NumPy
KWARGS = ("sutton_barto_reward",)  # the CartPoleEnv kwargs CartPoleVectorEnv takes too
RESET_LOW, RESET_HIGH = -0.05, 0.05  # CartPoleEnv.reset's bounds (no reset options under SB3)


class NumpyCartPoleVecEnv(BatchedVecEnv):
    def __init__(
        self,
        env_id: str,
        n_envs: int,
        kwargs: dict[str, Any],
        max_episode_steps: int | None,
        monitor_dir: Path | None,
        override_existing: bool = True,
    ) -> None:
        spec = gym.spec(env_id)
        steps = max_episode_steps or spec.max_episode_steps
        self.env = CartPoleVectorEnv(num_envs=n_envs, max_episode_steps=steps, **kwargs)  # type: ignore[arg-type]  # (CartPole's specs set it)
        self.spec = spec
        self.render_mode = None
        super().__init__(n_envs, self.env.single_observation_space, self.env.single_action_space)
        self.rngs = [seeding.np_random()[0] for _ in range(n_envs)]
        self.episodes = EpisodeStats(n_envs, env_id, monitor_dir, override_existing)
        self.actions = np.zeros(n_envs, dtype=np.int64)

    @property
    def _state(self) -> np.ndarray:
        """CartPoleVectorEnv's state, one column per env: there from its first reset (in ``reset``)."""
        state = self.env.state
        if state is None:
            raise RuntimeError("the NumPy CartPole envs were stepped before their first reset")
        return state

    def _reset_one(self, i: SupportsIndex) -> None:
        self._state[:, i] = self.rngs[i].uniform(low=RESET_LOW, high=RESET_HIGH, size=(4,))
        self.env.steps[i] = 0

    def reset(self) -> VecEnvObs:
        if self.env.state is None:
            self.env.reset()
        for i, seed in enumerate(self._seeds):
            if seed is not None:
                self.rngs[i] = seeding.np_random(seed)[0]
            self._reset_one(i)
        self._reset_seeds()
        self._reset_options()
        self.episodes.restart()
        self.reset_infos = [{} for _ in range(self.num_envs)]
        return self._state.T.astype(np.float32, order="C")

    def step_async(self, actions: np.ndarray) -> None:
        self.actions = actions

    def step_wait(self) -> VecEnvStepReturn:
        obs, rewards, terminated, truncated, _ = self.env.step(self.actions)
        # (its observations come transposed, in Fortran order: torch would multiply them with another
        # summation order than DummyVecEnv's C-ordered ones, and the agent drift from DummyVecEnv's by a last bit)
        obs = np.ascontiguousarray(obs)
        self.env.prev_done[:] = False  # finished envs are reset here, not on the next step
        dones = terminated | truncated
        infos: list[dict[str, Any]] = [{"TimeLimit.truncated": bool(truncated[i] and not terminated[i])}
                                       for i in range(self.num_envs)]  # fmt: skip
        self.episodes.step(rewards, dones, infos)
        for i in np.flatnonzero(dones):
            infos[i]["terminal_observation"] = obs[i].copy()
            self._reset_one(i)
            obs[i] = self._state[:, i]
        return obs, rewards, dones, infos

    def close(self) -> None:
        self.episodes.close()
        self.env.close()

    def _batch(self) -> Any:
        return self.env
