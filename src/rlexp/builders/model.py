"""Builds a new SB3 model from the `algo` config; each failure becomes one line naming the config key that
caused it (the front door runs this builder on a one-env probe before a run dir exists)."""

from __future__ import annotations

import functools
import inspect
import re
from typing import Any

from omegaconf import DictConfig
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm
from stable_baselines3.common.vec_env import VecEnv

from rlexp.builders.backends import algo_class, is_sbx, sbx_keywords
from rlexp.builders.device import resolve_device
from rlexp.builders.noise import build_action_noise
from rlexp.builders.schedules import CONSTANT
from rlexp.config.hydra_versions import instantiate
from rlexp.config.schema import ActionNoiseConfig, AlgoConfig, Backend, EnvConfig
from rlexp.errors import ConfigError, collapsed, one_line_error

# replay buffer of the front door's probe model: the configured size is checked, not allocated
PROBE_BUFFER_SIZE = 1_000


def check_policy(cls: type[BaseAlgorithm], policy: str) -> None:
    """``policy`` (algo.policy) is one of the class's."""
    names = sorted(getattr(cls, "policy_aliases", {}))
    if policy not in names:
        raise ConfigError(f"algo.policy={policy}: not a policy of {cls.__name__} (choose {', '.join(names)})")


def observation_warnings(algo: AlgoConfig, env_id: str, env: VecEnv) -> list[str]:
    """An MLP policy on image observations: a run that can start but rarely learns (raw pixels flattened)."""
    from stable_baselines3.common.preprocessing import is_image_space

    policy = str(algo.policy)
    if policy.startswith("Mlp") and is_image_space(env.observation_space, check_channels=False):
        shape = "x".join(str(n) for n in env.observation_space.shape)  # type: ignore[union-attr]  # (an image space is a Box)
        return [
            f"algo.policy={policy} on image observations ({shape}) of {env_id}: an MLP on raw pixels rarely "
            f"learns; algo.policy={policy.replace('Mlp', 'Cnn')} fits images"
        ]
    return []


def _schedule(key: str, spec: DictConfig, initial: float) -> Any:
    """The schedule ``spec`` of ``key`` (lr_schedule, clip_range_schedule), checked at the start and end of
    training."""
    try:
        schedule = instantiate(spec, initial=initial)
        values = [float(schedule(1.0)), float(schedule(0.0))]
    except ConfigError:
        raise
    except Exception as err:
        raise ConfigError(f"{key}: {one_line_error(err)}") from None
    if not all(v >= 0 and v == v and v != float("inf") for v in values):
        raise ConfigError(f"{key}: goes from {values[0]} to {values[1]}; a schedule must stay finite and >= 0")
    return schedule


def schedules(algo: AlgoConfig, lr_schedule: DictConfig, clip_range_schedule: DictConfig) -> dict[str, Any]:
    """The learning rate (and clip range) a new model of ``algo`` trains with, on the config's schedules."""
    params = {"learning_rate": _schedule("lr_schedule", lr_schedule, algo.learning_rate)}
    if hasattr(algo, "clip_range"):  # (an on-policy algo's key: the schema's AlgoConfig lacks it)
        params["clip_range"] = _schedule("clip_range_schedule", clip_range_schedule, _on_policy_key(algo, "clip_range"))
    elif clip_range_schedule._target_ != CONSTANT:
        raise ConfigError(f"clip_range_schedule: algo={algo._target_} has no clip_range to schedule")
    return params


def _on_policy_key(algo: AlgoConfig, name: str) -> Any:
    """A key of on-policy algorithms (not the schema's AlgoConfig's), as the config has it."""
    return getattr(algo, name)


def _named_key(algo: AlgoConfig, text: str, fallback: str) -> str:
    """The algo key an SB3 error message names (`batch_size`, n_steps=0), else ``fallback``."""
    for name in re.findall(r"`(\w+)`|\b(\w+)=", text):
        name = next(n for n in name if n)
        if hasattr(algo, name):
            return f"algo.{name}"
        if name == "n_envs":
            return "env.n_envs"
    return fallback


def build_model(
    env: VecEnv,
    algo: AlgoConfig,
    *,
    backend: Backend | str,
    torch_threads: int | None,
    device: str,
    seed: int,
    lr_schedule: DictConfig,
    clip_range_schedule: DictConfig,
    action_noise: ActionNoiseConfig,
    verbose: int,
    env_cfg: EnvConfig,
    probe: bool = False,
) -> BaseAlgorithm:
    """A new model of ``algo`` for ``env`` (built from ``env_cfg``); refuses an algorithm that cannot act in
    the env before any env step. The other keywords are the config's keys of those names (``verbose``:
    logger.verbose).

    ``probe``: the front door's check (CPU, quiet, a small replay buffer) of what the run will build;
    its failures become one line naming the config key.
    """
    cls = algo_class(algo, backend, torch_threads)
    check_policy(cls, algo.policy)
    make = instantiate(algo, _partial_=True, _convert_="all")
    if isinstance(make.keywords.get("train_freq"), list):  # YAML has no tuples: [1, episode]
        make.keywords["train_freq"] = tuple(make.keywords["train_freq"])
    if probe and "buffer_size" in make.keywords:
        make.keywords["buffer_size"] = min(make.keywords["buffer_size"], PROBE_BUFFER_SIZE)
    if is_sbx(backend):  # (its device and schedule: rlexp.run.front_door.check_static)
        make = functools.partial(cls, *make.args, **sbx_keywords(algo, cls, make.keywords))
    extra: dict[str, Any] = schedules(algo, lr_schedule, clip_range_schedule)
    noise = build_action_noise(action_noise, env.action_space)
    if noise is not None:
        if "action_noise" not in inspect.signature(cls).parameters:
            raise ConfigError(f"action_noise: {cls.__name__} takes no action noise (use action_noise.kind=none)")
        extra["action_noise"] = noise
    device = "cpu" if probe else resolve_device(device, algo, backend)
    verbose = 0 if probe else int(verbose >= 2)  # SB3's own messages and tables
    try:  # (its warnings: the front door's, recorded with the run's, rlexp.run.library_warnings)
        model = make(env=env, seed=seed, device=device, verbose=verbose, _init_setup_model=False, **extra)
    except Exception as err:
        if not probe:  # the front door built this config: anything else is not the config's fault
            raise
        text = collapsed(err)
        if isinstance(err, AssertionError) and "action spaces" in text:
            from rlexp.config.env_routing import variants
            from rlexp.config.plain import plain_dict

            supported = ", ".join(re.findall(r"<class '[\w.]+\.(\w+)'>", text.split(" but ")[0]))
            other = variants(env_cfg.id, plain_dict(env_cfg.kwargs, resolve=False))
            raise ConfigError(
                f"algo {cls.__name__} cannot act in env.id={env_cfg.id}: its action space is "
                f"{type(env.action_space).__name__} and {cls.__name__} supports only {supported}"
                + (f" (other versions of {env_cfg.id}: {', '.join('env=' + name for name in other)})" if other else "")
            ) from None
        raise ConfigError(f"{_named_key(algo, text, 'algo')}: {cls.__name__} refuses it ({text})") from None
    try:
        model._setup_model()
    except Exception as err:
        if not probe:
            raise
        raise ConfigError(f"{_setup_key(algo, model)}: {one_line_error(err)}") from None
    return model


def _setup_key(algo: AlgoConfig, model: BaseAlgorithm) -> str:
    """Which config part broke SB3's _setup_model: the replay buffer (built first) or the policy."""
    if isinstance(model, OffPolicyAlgorithm) and getattr(model, "replay_buffer", None) is None:
        for key in ("replay_buffer_class", "replay_buffer_kwargs"):
            if getattr(algo, key, None):
                return f"algo.{key}"
        return "algo.buffer_size"
    return "algo.policy_kwargs" if algo.policy_kwargs else "algo.policy"
