"""Exploration noise for off-policy continuous-control algorithms (RL Zoo's noise_type/noise_std)."""

from __future__ import annotations

import numpy as np
from gymnasium import spaces
from stable_baselines3.common.noise import ActionNoise, NormalActionNoise, OrnsteinUhlenbeckActionNoise

from rlexp.config.schema import ActionNoiseConfig
from rlexp.errors import ConfigError

NOISE_CLASSES = {"normal": NormalActionNoise, "ornstein_uhlenbeck": OrnsteinUhlenbeckActionNoise}


def build_action_noise(noise_cfg: ActionNoiseConfig, action_space: spaces.Space) -> ActionNoise | None:
    kind = noise_cfg.kind.value
    if kind == "none":
        return None
    if not isinstance(action_space, spaces.Box):
        raise ConfigError(f"action_noise.kind={kind} needs a continuous (Box) action space, got {action_space}")
    n_actions = action_space.shape[-1]
    return NOISE_CLASSES[kind](mean=np.zeros(n_actions), sigma=noise_cfg.std * np.ones(n_actions))
