"""A random-policy baseline: what "learnt something" is measured against (RL papers report it next to
the agent's score; a run that ends no better than it learnt nothing)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
from omegaconf import DictConfig

EPISODE_CAP = 10_000  # steps after which a random episode counts as never ending
STEP_BUDGET = 50_000  # steps in all, so that the baseline stays cheap on long-episode envs


def random_returns(
    env: gym.Env, seed: int, episodes: int, stop: Callable[[], bool] | None = None
) -> tuple[list[float], int]:
    """Returns of up to ``episodes`` random-policy episodes (episode i reset with ``seed + i``) from the env's
    Monitor (the raw reward, as evaluations count it), and how many did not end within EPISODE_CAP steps.
    ``stop``: asked at every step; True abandons the baseline (returns what finished)."""
    returns: list[float] = []
    endless, used = 0, 0
    env.action_space.seed(seed)
    for i in range(episodes):
        env.reset(seed=seed + i)
        for _ in range(min(EPISODE_CAP, STEP_BUDGET - used)):
            used += 1
            _, _, terminated, truncated, info = env.step(env.action_space.sample())
            if stop is not None and stop():
                return returns, endless
            if terminated or truncated:
                returns.append(float(info["episode"]["r"]) if "episode" in info else float("nan"))
                break
        else:
            if used >= STEP_BUDGET:
                break
            endless += 1
    return returns, endless


def random_baseline(
    env_cfg: DictConfig, seed: int, episodes: int, stop: Callable[[], bool] | None = None
) -> dict[str, Any] | None:
    """summary.json's ``random_baseline``: mean, IQM, 95% CI of the mean of random-policy episodes on one
    env as the eval env holds it, seeded as the final evaluation (None when no episode finished)."""
    from rlexp.run.envs import EVAL_SEED_OFFSET, one_env
    from rlexp.stats.scores import summarize

    env = one_env(env_cfg, for_eval=True)
    try:
        returns, endless = random_returns(env, seed + EVAL_SEED_OFFSET, episodes, stop)
    finally:
        env.close()
    if not returns:
        return None
    s = summarize(returns, seed=seed)
    return {key: s[key] for key in ("mean", "std", "iqm", "ci95_mean", "episodes")} | {"endless": endless}
