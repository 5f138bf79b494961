"""SB3's DummyVecEnv without its per-step copies that nothing needs.

DummyVecEnv deep-copies the infos and the observation buffer at every step (SB3 #618: about half of
``step_wait`` on a cheap env). The infos are the envs' own fresh dicts each step, so a new list of them is
enough; the observations are copied once into new arrays (the caller keeps them: the rollout buffer
reads the previous step's after this one). Everything else, reset, seeding, attributes, rendering, is
DummyVecEnv's, and a run through it is identical to one through DummyVecEnv step by step
(tests/vecenvs/test_vec_backends.py)."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from stable_baselines3.common.vec_env import DummyVecEnv
from stable_baselines3.common.vec_env.base_vec_env import VecEnvObs, VecEnvStepReturn
from stable_baselines3.common.vec_env.util import dict_to_obs


class LeanVecEnv(DummyVecEnv):
    def step_wait(self) -> VecEnvStepReturn:
        infos: list[dict[str, Any]] = [{}] * self.num_envs
        for env_idx, env in enumerate(self.envs):
            obs, reward, terminated, truncated, info = env.step(self.actions[env_idx])
            self.buf_rews[env_idx] = reward
            done = terminated or truncated
            self.buf_dones[env_idx] = done
            info["TimeLimit.truncated"] = truncated and not terminated
            if done:
                info["terminal_observation"] = obs
                obs, self.reset_infos[env_idx] = env.reset()
            infos[env_idx] = info
            self._save_obs(env_idx, obs)
        self.buf_infos = infos
        return self._obs_from_buf(), self.buf_rews.copy(), self.buf_dones.copy(), infos

    def _obs_from_buf(self) -> VecEnvObs:
        return dict_to_obs(self.observation_space, OrderedDict((key, buf.copy()) for key, buf in self.buf_obs.items()))
