"""The run's final score: a fresh, seeded series of episodes of the final agent on the eval env."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from omegaconf import DictConfig
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.vec_env import VecEnv, sync_envs_normalization

from rlexp.run.envs import EVAL_SEED_OFFSET


def final_evaluation(
    model: BaseAlgorithm,
    train_env: VecEnv,
    eval_env: VecEnv,
    cfg: DictConfig,
    each_step: Callable[[dict[str, Any], dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Mean, std, episodes and mean length over ``callbacks.eval.final_episodes`` episodes.

    ``each_step``: called after every env step (a stop signal abandons the evaluation there).

    The eval env is reseeded with ``seed + 10000`` whatever the periodic evaluations consumed, and uses
    (never updates) the training normalization statistics, so that a plain SB3 script reproduces it.
    """
    eval_env.seed(cfg.seed + EVAL_SEED_OFFSET)
    sync_envs_normalization(train_env, eval_env)
    rewards, lengths = evaluate_policy(
        model,
        eval_env,
        n_eval_episodes=cfg.callbacks.eval.final_episodes,
        deterministic=cfg.callbacks.eval.deterministic,
        return_episode_rewards=True,
        callback=each_step,
    )
    return {
        "mean": float(np.mean(rewards)),
        "std": float(np.std(rewards)),
        "episodes": len(rewards),
        "mean_length": float(np.mean(lengths)),
    }
