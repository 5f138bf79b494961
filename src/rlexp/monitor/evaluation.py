"""How a run is evaluated: the schedule of its periodic evaluations, the seeds and env count of its eval
envs, and its final score, a fresh, seeded series of episodes of the final agent on its own eval envs.

Evaluations step several eval envs side by side (``callbacks.eval.n_envs``; by default one per episode,
at most ``MAX_EVAL_ENVS``), so that each step is one batched forward pass of the policy instead of one per
episode. SB3's ``evaluate_policy`` spreads the episodes over the envs (env i counts ``(n + i) // envs`` of
them), all in this process and in lockstep, so the result depends on the seed and the env count only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from rlexp.config.schema import EvalConfig

if TYPE_CHECKING:
    from stable_baselines3.common.base_class import BaseAlgorithm
    from stable_baselines3.common.vec_env import VecEnv

MAX_EVAL_ENVS = 16  # more envs than this gain little per forward pass and cost memory (Atari)
EVAL_SEED_OFFSET = 10_000  # eval episodes never share a seed with training episodes
SHORT_RUN_EVALUATIONS = 5  # periodic evaluations of a run whose budget is below callbacks.eval.freq


def eval_env_count(eval_cfg: EvalConfig, episodes: int) -> int:
    """How many eval envs an evaluation of ``episodes`` episodes steps side by side."""
    return max(1, min(episodes, eval_cfg.n_envs or MAX_EVAL_ENVS))


def eval_freq(eval_cfg: EvalConfig, steps: int) -> int:
    """Env steps (summed over envs) between periodic evaluations of ``eval_cfg`` (callbacks.eval); 0: none.
    ``steps``: what the run trains (n_timesteps in whole rollouts, rlexp.run.budget; n_timesteps where not
    known yet). A budget below callbacks.eval.freq is evaluated SHORT_RUN_EVALUATIONS times instead of never,
    so that a short run too has its best agent, its curve and its sample efficiency."""
    if eval_cfg.n_evaluations:
        return steps // eval_cfg.n_evaluations
    if 0 < steps < eval_cfg.freq:
        return max(steps // SHORT_RUN_EVALUATIONS, 1)
    return eval_cfg.freq


def schedule_note(eval_cfg: EvalConfig, steps: int) -> str | None:
    """The line that says a short run (``steps``: what it trains) changed the evaluation schedule of
    ``eval_cfg`` (callbacks.eval; None: it did not)."""
    freq = eval_freq(eval_cfg, steps)
    if eval_cfg.n_evaluations or freq in (0, eval_cfg.freq):
        return None
    return (
        f"{steps:,} steps are below callbacks.eval.freq={eval_cfg.freq}: evaluating every "
        f"{freq:,} steps instead ({steps // freq} evaluations; callbacks.eval.freq=0 turns them off)"
    )


@contextmanager
def training_rngs_untouched(model: BaseAlgorithm) -> Iterator[None]:
    """Whatever an evaluation draws comes back undrawn: torch's (on the model's device too), NumPy's and
    Python's global generators, the model's action space and sbx's JAX keys are as they were before it. A
    stochastic evaluation (Atari, MiniGrid) samples actions from torch's generator (sbx: from its policy's
    key), DQN's epsilon from NumPy's: without this, evaluating a run would change what it learns, and a run
    with evaluations would not train the weights of the same run without them."""
    import random

    import numpy as np
    import torch

    numpy_state, python_state = np.random.get_state(), random.getstate()
    space_rng = getattr(model.action_space, "_np_random", None)
    space_state = None if space_rng is None else space_rng.bit_generator.state
    # sbx keeps JAX keys (immutable arrays): the references are the state
    keys = [(owner, name, getattr(owner, name)) for owner in (model, getattr(model, "policy", None))
            for name in ("key", "noise_key") if owner is not None and hasattr(owner, name)]  # fmt: skip
    device = getattr(model, "device", None)
    on_cuda = isinstance(device, torch.device) and device.type == "cuda"
    with torch.random.fork_rng(devices=[device] if on_cuda else []):
        try:
            yield
        finally:
            np.random.set_state(numpy_state)
            random.setstate(python_state)
            if space_rng is not None:
                space_rng.bit_generator.state = space_state
            for owner, name, value in keys:
                setattr(owner, name, value)


def final_evaluation(
    model: BaseAlgorithm,
    train_env: VecEnv,
    eval_env: VecEnv,
    episodes: int,
    deterministic: bool,
    each_step: Callable[[dict[str, Any], dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Mean, std, episodes, mean length and env count over ``episodes`` episodes on ``eval_env`` (built for
    it by rlexp.builders.envs.build_eval_env, env i seeded ``seed + 10000 + i``).

    ``each_step``: called after every env step (a stop signal abandons the evaluation there).

    The eval envs use (never update) the training normalization statistics, so that a plain SB3 script
    reproduces the score: ``make_vec_env(id, n_envs=<n_envs>, seed=seed + 10000)`` and ``evaluate_policy``.
    """
    import numpy as np
    from stable_baselines3.common.evaluation import evaluate_policy
    from stable_baselines3.common.vec_env import sync_envs_normalization

    sync_envs_normalization(train_env, eval_env)
    rewards, lengths = evaluate_policy(
        model,
        eval_env,
        n_eval_episodes=episodes,
        deterministic=deterministic,
        return_episode_rewards=True,
        callback=each_step,
    )
    return {
        "mean": float(np.mean(rewards)),
        "std": float(np.std(rewards)),
        "episodes": len(rewards),  # type: ignore[arg-type]  # (a list: return_episode_rewards)
        "mean_length": float(np.mean(lengths)),
        "n_envs": eval_env.num_envs,
    }
