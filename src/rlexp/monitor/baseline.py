"""A random-policy baseline: what "learnt something" is measured against (RL papers report it next to
the agent's score; a run that ends no better than it learnt nothing)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import gymnasium as gym

from rlexp.monitor.evaluation import EVAL_SEED_OFFSET

EPISODE_CAP = 10_000  # steps after which a random episode counts as never ending
STEP_BUDGET = 50_000  # steps in all, so that the baseline stays cheap on long-episode envs


def random_returns(
    env: gym.Env, seed: int, episodes: int, stop: Callable[[], bool] | None = None
) -> tuple[list[float], int, bool]:
    """Returns of up to ``episodes`` random-policy episodes (episode i reset with ``seed + i``), as the env's
    Monitor counts them (the raw reward of whole episodes: an Atari life lost is not an episode's end);
    how many did not end within EPISODE_CAP steps; and whether ``stop`` (asked at every step) cut it."""
    returns: list[float] = []
    endless, used = 0, 0
    env.action_space.seed(seed)
    for i in range(episodes):
        if used >= STEP_BUDGET:
            break
        env.reset(seed=seed + i)
        steps = 0
        while steps < EPISODE_CAP and used < STEP_BUDGET:
            _, _, terminated, truncated, info = env.step(env.action_space.sample())
            steps, used = steps + 1, used + 1
            if stop is not None and stop():
                return returns, endless, True
            if "episode" in info:
                returns.append(float(info["episode"]["r"]))
                break
            if terminated or truncated:  # a life lost (EpisodicLifeEnv): the game goes on
                env.reset()
        else:
            endless += steps >= EPISODE_CAP
    return returns, endless, False


def random_baseline(
    env: gym.Env, seed: int, episodes: int, stop: Callable[[], bool] | None = None
) -> dict[str, Any] | None:
    """summary.json's ``random_baseline``: mean, std, IQM and the 95% CI of the mean of random-policy
    episodes on ``env``, one env as the eval env holds it (rlexp.builders.envs.one_env; episode i seeded
    ``seed + 10000 + i``), the number of episodes and of those that never ended. None when ``stop`` cut it
    (a resumed run does not redo it)."""
    from rlexp.stats.scores import summarize

    returns, endless, stopped = random_returns(env, seed + EVAL_SEED_OFFSET, episodes, stop)
    if stopped:
        return None
    found: dict[str, Any] = {"episodes": len(returns), "endless": endless}
    if returns and all(math.isfinite(r) for r in returns):
        s = summarize(returns, seed=seed)
        found |= {key: s[key] for key in ("mean", "std", "iqm", "ci95_mean")}
    return found
