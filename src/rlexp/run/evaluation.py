"""The run's final score: a fresh, seeded series of episodes of the final agent on its own eval envs.

Evaluations step several eval envs side by side (``callbacks.eval.n_envs``; by default one per episode,
at most ``MAX_EVAL_ENVS``), so that each step is one batched forward pass of the policy instead of one per
episode. SB3's ``evaluate_policy`` spreads the episodes over the envs (env i counts ``(n + i) // envs`` of
them), all in this process and in lockstep, so the result depends on the seed and the env count only.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omegaconf import DictConfig

if TYPE_CHECKING:
    from stable_baselines3.common.base_class import BaseAlgorithm
    from stable_baselines3.common.vec_env import VecEnv

MAX_EVAL_ENVS = 16  # more envs than this gain little per forward pass and cost memory (Atari)


def eval_env_count(eval_cfg: DictConfig, episodes: int) -> int:
    """How many eval envs an evaluation of ``episodes`` episodes steps side by side."""
    return max(1, min(episodes, eval_cfg.get("n_envs") or MAX_EVAL_ENVS))


def build_eval_env(cfg: DictConfig, episodes: int, monitor_dir: Path | None, append: bool = False) -> VecEnv:
    """The eval envs of a run's evaluation of ``episodes`` episodes, env i seeded ``seed + 10000 + i``."""
    from rlexp.run.envs import build_vec_env

    return build_vec_env(
        cfg.env,
        cfg.seed,
        monitor_dir,
        for_eval=True,
        append=append,
        n_envs=eval_env_count(cfg.callbacks.eval, episodes),
        check_finite=cfg.diagnostics.finite,
    )


def final_evaluation(
    model: BaseAlgorithm,
    train_env: VecEnv,
    cfg: DictConfig,
    monitor_dir: Path | None,
    append: bool = False,
    each_step: Callable[[dict[str, Any], dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Mean, std, episodes, mean length and env count over ``callbacks.eval.final_episodes`` episodes.

    ``each_step``: called after every env step (a stop signal abandons the evaluation there).

    The eval envs are built for it and seeded with ``seed + 10000`` (env i: ``seed + 10000 + i``), and use
    (never update) the training normalization statistics, so that a plain SB3 script reproduces it:
    ``make_vec_env(id, n_envs=<n_envs>, seed=seed + 10000)`` and ``evaluate_policy``.
    """
    import numpy as np
    from stable_baselines3.common.evaluation import evaluate_policy
    from stable_baselines3.common.vec_env import sync_envs_normalization

    from rlexp.run.envs import closed_at_end

    episodes = cfg.callbacks.eval.final_episodes
    with closed_at_end(build_eval_env(cfg, episodes, monitor_dir, append)) as eval_env:  # (seeded as it is built)
        sync_envs_normalization(train_env, eval_env)
        rewards, lengths = evaluate_policy(
            model,
            eval_env,
            n_eval_episodes=episodes,
            deterministic=cfg.callbacks.eval.deterministic,
            return_episode_rewards=True,
            callback=each_step,
        )
    return {
        "mean": float(np.mean(rewards)),
        "std": float(np.std(rewards)),
        "episodes": len(rewards),
        "mean_length": float(np.mean(lengths)),
        "n_envs": eval_env.num_envs,
    }
