"""Which vector env steps a run's envs: ``env.vec_env``, with ``auto`` resolved, and a one-line error for a
backend that cannot step this env as configured (before anything is written)."""

from __future__ import annotations

from typing import Any

from rlexp.config.plain import plain_dict
from rlexp.config.schema import EnvConfig
from rlexp.errors import ConfigError
from rlexp.vecenvs import numpy_cartpole

# what the start line says each backend is
DESCRIPTIONS = {
    "dummy": "SB3's DummyVecEnv",
    "subproc": "SB3's SubprocVecEnv, one process per env",
    "lean": "in this process, SB3's DummyVecEnv without its per-step copies",
    "numpy": "gymnasium's NumPy-vectorized CartPole",
    "envpool": "EnvPool's C++ envs, stepped on its thread pool",
}
# auto's NumPy CartPole steps this many envs or more; fewer step faster one by one (lean): a NumPy step costs
# about 80 us however many envs it holds, a CartPole in lean about 12 us (a step of 1 env: 18 vs 80 us; of 4:
# 48 vs 76; even at 7)
NUMPY_FROM_ENVS = 8


def _numpy_refusal(env_cfg: EnvConfig) -> str | None:
    """Why gymnasium's NumPy CartPole cannot stand in for this env (None: it can, with the same results)."""
    if env_cfg.id not in numpy_cartpole.IDS:
        return f"gymnasium ships only {' and '.join(numpy_cartpole.IDS)} NumPy-vectorized, not {env_cfg.id}"
    for name in env_cfg.wrappers:
        return f"env.wrappers.{name}: the NumPy CartPole steps all envs at once, without per-env wrappers"
    for key in {**env_cfg.kwargs, **env_cfg.eval_kwargs}:
        if key not in numpy_cartpole.KWARGS:
            return f"env.kwargs.{key}: the NumPy CartPole takes only {', '.join(numpy_cartpole.KWARGS)}"
    return None


def resolved(env_cfg: EnvConfig, for_eval: bool = False, render: bool = False, n_envs: int | None = None) -> str:
    """The backend that steps these envs (``n_envs`` of them; default: env.n_envs). ``auto``: the NumPy
    CartPole where it gives the same results as DummyVecEnv and steps NUMPY_FROM_ENVS envs or more, otherwise
    the lean in-process one (the same results). Eval envs run in this process (subproc's become lean: the same
    results); ``render`` (a video, an export: one gymnasium env as SB3 wraps it) is lean or dummy."""
    kind = env_cfg.vec_env.value if hasattr(env_cfg.vec_env, "value") else str(env_cfg.vec_env)
    if render:
        return "dummy" if kind == "dummy" else "lean"
    if kind == "auto":
        many = (env_cfg.n_envs if n_envs is None else n_envs) >= NUMPY_FROM_ENVS
        return "numpy" if many and _numpy_refusal(env_cfg) is None else "lean"
    if kind == "numpy":
        refusal = _numpy_refusal(env_cfg)
        if refusal is not None:
            raise ConfigError(f"env.vec_env=numpy: {refusal} (env.vec_env=auto picks what can)")
    if kind == "subproc" and for_eval:
        return "lean"
    return kind


def envpool_options(env_cfg: EnvConfig, kwargs: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """EnvPool's task and options for this env (one-line errors for what it cannot take)."""
    from rlexp.vecenvs.envpool_env import envpool_task

    wrappers = plain_dict(env_cfg.wrappers)
    return envpool_task(env_cfg, kwargs, wrappers)


def vec_env_note(env_cfg: EnvConfig) -> str:
    """The start line that says what steps the envs (and that auto chose it)."""
    kind = resolved(env_cfg)
    picked = " (env.vec_env=auto)" if str(getattr(env_cfg.vec_env, "value", env_cfg.vec_env)) == "auto" else ""
    return f"vector env: {env_cfg.n_envs} x {env_cfg.id}, {kind}: {DESCRIPTIONS[kind]}{picked}"
