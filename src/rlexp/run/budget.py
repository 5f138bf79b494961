"""The steps a run really trains. SB3's learn() collects whole rollouts and checks the budget only between
them, so it stops at the first rollout boundary at or past ``n_timesteps`` (RL Zoo's runs do too: rlexp
keeps them, for parity). The run counts its progress and evaluations to that step, says it before training
and, where it is well past the budget, records it as a warning."""

from __future__ import annotations

from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.type_aliases import TrainFrequencyUnit

# more than this share beyond n_timesteps is a warning, recorded in summary.json (less is a line)
WARN_ABOVE = 0.1


def rollout_steps(model: BaseAlgorithm) -> tuple[int, str] | None:
    """The env steps (summed over envs) of one rollout, and the keys that make it; None where the agent's
    rollouts have no fixed length (episodes: train_freq in episodes, ARS)."""
    n_envs = model.n_envs
    n_steps = getattr(model, "n_steps", None)
    if isinstance(n_steps, int) and hasattr(model, "rollout_buffer"):  # PPO, A2C, TRPO, RecurrentPPO
        return n_steps * n_envs, f"algo.n_steps={n_steps} x env.n_envs={n_envs}"
    train_freq = getattr(model, "train_freq", None)
    unit = getattr(train_freq, "unit", None)
    if unit == TrainFrequencyUnit.STEP:  # off-policy: train_freq steps of every env between two updates
        return train_freq.frequency * n_envs, f"algo.train_freq={train_freq.frequency} x env.n_envs={n_envs}"  # type: ignore[union-attr]  # (a unit: SB3's TrainFreq)
    return None


def true_steps(start: int, n_timesteps: int, rollout: int | None) -> int:
    """The step learn() stops at, training ``n_timesteps`` from ``start`` in whole rollouts."""
    if rollout is None or n_timesteps <= 0:
        return start + n_timesteps
    return start + -(-n_timesteps // rollout) * rollout


def budget_note(model: BaseAlgorithm, n_timesteps: int, trained: int) -> tuple[str, bool] | None:
    """The line saying what a run trains for ``n_timesteps`` (``trained``: in whole rollouts), and whether it
    is a warning; None when it trains exactly n_timesteps."""
    rollout = rollout_steps(model)
    if rollout is None:  # (whole episodes: how far past n_timesteps is not known before they end)
        if getattr(getattr(model, "train_freq", None), "unit", None) == TrainFrequencyUnit.EPISODE:
            kind = f"algo.train_freq={model.train_freq.frequency} episode"  # type: ignore[attr-defined]  # (an off-policy model's, by the test above)
        elif hasattr(model, "n_delta"):
            kind = "ARS evaluates each candidate over whole episodes"
        else:
            return None
        return f"n_timesteps={n_timesteps:,}: learn() collects whole episodes ({kind}): it ends past it", False
    if trained == n_timesteps:
        return None
    size, keys = rollout
    line = (
        f"n_timesteps={n_timesteps:,} trains {trained:,} steps: learn() collects whole rollouts of {size:,} "
        f"steps ({keys}), as in RL Zoo"
    )
    warn = trained > n_timesteps * (1 + WARN_ABOVE)
    below = _below_zero(model, 1 - trained / n_timesteps) if warn else []
    if below:  # (SB3 counts a schedule's progress to n_timesteps, as RL Zoo asks learn() for it)
        line += (
            f"; its {' and '.join(below)} schedule{'s go' if len(below) > 1 else ' goes'} below 0 past n_timesteps "
            f"(a multiple of {size:,} steps avoids it)"
        )
    return line, warn


def _below_zero(model: BaseAlgorithm, progress_remaining: float) -> list[str]:
    """The model's schedules (learning rate, clip range) whose value at the end of training is below 0."""
    found = []
    for name, said in (("lr_schedule", "learning-rate"), ("clip_range", "clip-range")):
        schedule = getattr(model, name, None)
        try:
            value = float(schedule(progress_remaining)) if callable(schedule) else None  # type: ignore[arg-type]  # (not a number: caught below)
        except Exception:  # (a schedule of the user's that takes no such progress: nothing to say)
            value = None
        if value is not None and value < 0:
            found.append(said)
    return found
