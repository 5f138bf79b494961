"""What each training diagnostic costs, per call, against what it is added to: one vector-env step with
and without the NaN check, the callbacks' rollout-start checks, the parameters check and the Q estimate.

A whole-run comparison (throughput.py's "diagnostics cost" column) on a shared machine is noisier than
the 2% it must resolve; these per-call costs, times how often each runs, bound it.

    python benchmarks/diagnostics_cost.py
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import torch
from omegaconf import OmegaConf
from stable_baselines3 import PPO, SAC
from stable_baselines3.common.env_util import make_vec_env

from rlexp.config.schema import DiagnosticsConfig
from rlexp.monitor.finite import PARAMETERS_EVERY, FiniteEnv, FiniteTraining, check_parameters
from rlexp.monitor.health import TrainingHealth, estimated_q

# case -> algorithm, env id, envs, kwargs (throughput.py's cases, shortened)
CASES = {
    "sac-pendulum": (SAC, "Pendulum-v1", 1, {"learning_starts": 100}),
    "ppo-cartpole": (PPO, "CartPole-v1", 8, {"n_steps": 32}),
}


def microseconds(call: Callable[[], object], n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        call()
    return (time.perf_counter() - start) / n * 1e6


def measure(algo: type, env_id: str, n_envs: int, kwargs: dict, cfg: object) -> tuple[float, ...]:
    """Microseconds: a plain env step, what the NaN check adds, the callbacks at one rollout start, one
    parameters check, one Q estimate (NaN without a critic)."""
    plain, checked = make_vec_env(env_id, n_envs=n_envs, seed=0), FiniteEnv(make_vec_env(env_id, n_envs=n_envs, seed=0))
    model = algo("MlpPolicy", plain, seed=0, device="cpu", **kwargs)
    model.learn(1500)
    plain.reset(), checked.reset()
    actions = np.array([plain.action_space.sample() for _ in range(n_envs)])
    step = microseconds(lambda: plain.step(actions), 3000)
    step_checked = microseconds(lambda: checked.step(actions), 3000)
    finite, health = FiniteTraining(), TrainingHealth(cfg, 10**9, [])
    for callback in (finite, health):
        callback.init_callback(model)
        callback.on_training_start({}, {})

    def rollout_start() -> None:
        model.logger.name_to_value["train/n_updates"] = time.perf_counter()  # a fresh update each time
        finite.on_rollout_start()
        health.on_rollout_start()

    callbacks = microseconds(rollout_start, 3000)
    parameters = microseconds(lambda: check_parameters(model), 300)
    q = microseconds(lambda: estimated_q(model), 100) if algo is SAC else float("nan")
    return step, step_checked - step, callbacks, parameters, q


def main() -> None:
    torch.set_num_threads(1)
    cfg = OmegaConf.structured(DiagnosticsConfig)
    print(
        f"{'case':<14} {'env step us':>12} {'+ NaN check':>12} {'callbacks/rollout':>18} {'params us':>10} {'Q us':>8}"
    )
    for case, (algo, env_id, n_envs, kwargs) in CASES.items():
        step, nan_check, callbacks, parameters, q = measure(algo, env_id, n_envs, kwargs, cfg)
        print(
            f"{case:<14} {step:>12.1f} {nan_check:>+12.1f} {callbacks:>18.1f} {parameters:>10.0f} {q:>8.0f}",
            flush=True,
        )
    print(
        f"(the NaN check runs at each step; the callbacks once per rollout; the parameters check and the Q "
        f"estimate once per {PARAMETERS_EVERY} and {cfg.q_every} steps or more)"
    )


if __name__ == "__main__":
    main()
