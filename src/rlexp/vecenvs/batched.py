"""What SB3's VecEnv asks of a vector env that steps all its envs in one object (gymnasium's NumPy
CartPole, an EnvPool pool): attributes read from that object, no per-env attributes or methods, no
frames, and Monitor's episode statistics (rlexp.vecenvs.episodes), which evaluate_policy reads when
``env_is_wrapped(Monitor)`` says so."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import VecEnv
from stable_baselines3.common.vec_env.base_vec_env import VecEnvIndices


class BatchedVecEnv(VecEnv):
    OWN = ("spec", "render_mode")  # attributes this class answers itself

    def _batch(self) -> Any:
        """The object that steps the envs (its attributes are every env's)."""
        raise NotImplementedError

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        value = getattr(self, attr_name) if attr_name in self.OWN else getattr(self._batch(), attr_name)
        return [value for _ in self._get_indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        raise AttributeError(f"{type(self).__name__} cannot set {attr_name!r} per env")

    def env_method(self, method_name: str, *args: Any, indices: VecEnvIndices = None, **kwargs: Any) -> list[Any]:
        raise AttributeError(f"{type(self).__name__} has no per-env {method_name!r}")

    def env_is_wrapped(self, wrapper_class: type[gym.Wrapper], indices: VecEnvIndices = None) -> list[bool]:
        return [wrapper_class is Monitor for _ in self._get_indices(indices)]

    def get_images(self) -> Sequence[np.ndarray | None]:
        return [None for _ in range(self.num_envs)]
