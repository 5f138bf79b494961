"""NaN or inf stops a run at once (diagnostics.finite): in the env's observations and rewards, the agent's
actions, a logged loss or the policy's parameters. A diverged agent is never saved (rlexp.rundir.agents
checks its parameters before every save)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np
import torch
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.vec_env import VecCheckNan

from rlexp.errors import Diverged

PARAMETERS_EVERY = 1000  # steps between two checks of the parameters, at least (the losses: every update)


class FiniteEnv(VecCheckNan):
    """SB3's NaN/inf check of observations, rewards and actions, as a one-line Diverged (SB3's message
    prints whole arrays over several lines)."""

    def __init__(self, venv: Any) -> None:
        super().__init__(venv, raise_exception=True)

    def _check_val(self, event: str, **kwargs: Any) -> None:
        if all(_finite(value) for value in kwargs.values()):  # one sum per array, not SB3's four calls
            return
        try:
            super()._check_val(event, **kwargs)
        except ValueError as err:
            found = str(err).split(".\r\n", 1)[0]  # "found nan in observations, found inf in rewards"
            source = "the agent's actions" if event == "step_async" else "the env"
            raise Diverged(f"{found} (from {source}{' at reset' if event == 'reset' else ''})") from None


def _finite(value: Any) -> bool:
    """No NaN or inf in an array (or a dict or tuple of them), at the cost of one sum: a sum of finite
    values that overflows says no, and SB3's full check then finds nothing."""
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    if isinstance(value, tuple):
        return all(_finite(v) for v in value)
    array = np.asarray(value)
    return array.dtype.kind not in "fc" or math.isfinite(array.sum())


class FiniteTraining(BaseCallback):
    """At the rollout start after each update (before a checkpoint is taken there): the losses SB3
    logged must be finite (not every logged value: explained_variance is NaN for constant returns), and
    every PARAMETERS_EVERY steps or more the policy's parameters too (rlexp.rundir.agents.save_agent checks them
    before every save)."""

    def __init__(self) -> None:
        super().__init__()
        self.updates: Any = None
        self.next_parameters = PARAMETERS_EVERY

    def _on_rollout_start(self) -> None:
        values = self.logger.name_to_value
        if values.get("train/n_updates", self.updates) != self.updates:  # (SAC: a rollout per step)
            self.updates = values["train/n_updates"]
            for key, value in values.items():
                if key.startswith("train/") and "loss" in key and not math.isfinite(float(value)):
                    raise Diverged(f"{key} is {value}")
        if self.num_timesteps >= self.next_parameters:
            self.next_parameters = self.num_timesteps + PARAMETERS_EVERY
            check_parameters(self.model)

    def _on_step(self) -> bool:
        return True


def check_parameters(model: Any) -> None:
    """The policy's parameters are finite (a diverged agent is never saved); sbx's too."""
    for name, p in named_parameters(model):
        finite = torch.isfinite(p).all() if isinstance(p, torch.Tensor) else np.isfinite(np.asarray(p)).all()
        if not bool(finite):
            raise Diverged(f"the policy's parameter {name} holds NaN or inf")


def named_parameters(model: Any) -> Iterator[tuple[str, Any]]:
    """The model's network parameters as (name, array): torch's for SB3, the flax train states' for sbx."""
    torch_params = list(model.policy.named_parameters())
    if torch_params or "sbx" not in type(model).__module__:
        yield from torch_params
        return
    import jax

    states = {k: v for k, v in vars(model.policy).items() if k.endswith("_state")}
    if getattr(model, "ent_coef_state", None) is not None:
        states["ent_coef_state"] = model.ent_coef_state
    for state_name, state in states.items():
        for path, leaf in jax.tree_util.tree_leaves_with_path(getattr(state, "params", None)):
            yield f"{state_name}{jax.tree_util.keystr(path)}", leaf
