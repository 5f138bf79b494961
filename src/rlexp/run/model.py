"""Builds a new SB3 model from the `algo` config, or loads a trained one to continue training."""

from __future__ import annotations

import inspect
import json
import re
import zipfile
from pathlib import Path
from typing import Any

from hydra.utils import get_class, instantiate
from omegaconf import DictConfig
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm
from stable_baselines3.common.vec_env import VecEnv

from rlexp.errors import ConfigError
from rlexp.run.noise import build_action_noise


def algo_class(cfg: DictConfig) -> type[BaseAlgorithm]:
    return get_class(cfg.algo._target_)


def resolve_device(cfg: DictConfig) -> str:
    """``auto`` keeps MLP policies of on-policy algorithms on the CPU, where they run faster."""
    if cfg.device != "auto":
        return cfg.device
    if issubclass(algo_class(cfg), OffPolicyAlgorithm) or cfg.algo.policy.startswith("Cnn"):
        return "auto"
    return "cpu"


def _schedules(cfg: DictConfig) -> dict[str, Any]:
    params = {"learning_rate": instantiate(cfg.lr_schedule, initial=cfg.algo.learning_rate)}
    if "clip_range" in cfg.algo:
        params["clip_range"] = instantiate(cfg.clip_range_schedule, initial=cfg.algo.clip_range)
    elif cfg.clip_range_schedule._target_ != "rlexp.run.schedules.constant":
        raise ConfigError(f"clip_range_schedule: algo={cfg.algo._target_} has no clip_range to schedule")
    return params


def build_model(cfg: DictConfig, env: VecEnv) -> BaseAlgorithm:
    """A new model; refuses an algorithm that cannot act in the env before any env step."""
    cls = algo_class(cfg)
    make = instantiate(cfg.algo, _partial_=True, _convert_="all")
    if isinstance(make.keywords.get("train_freq"), list):  # YAML has no tuples: [1, episode]
        make.keywords["train_freq"] = tuple(make.keywords["train_freq"])
    extra: dict[str, Any] = _schedules(cfg)
    noise = build_action_noise(cfg.action_noise, env.action_space)
    if noise is not None:
        if "action_noise" not in inspect.signature(cls).parameters:
            raise ConfigError(f"action_noise: {cls.__name__} takes no action noise (use action_noise.kind=none)")
        extra["action_noise"] = noise
    try:
        return make(env=env, seed=cfg.seed, device=resolve_device(cfg), verbose=cfg.logger.verbose, **extra)
    except AssertionError as err:
        if "action spaces" not in str(err):
            raise
        supported = ", ".join(re.findall(r"<class '[\w.]+\.(\w+)'>", str(err).split(" but ")[0]))
        raise ConfigError(
            f"algo {cls.__name__} cannot act in env.id={cfg.env.id}: its action space is "
            f"{type(env.action_space).__name__} and {cls.__name__} supports only {supported}"
        ) from None


def find_trained_agent(path: str) -> tuple[Path, Path]:
    """(model zip, directory holding its vecnormalize.pkl / replay_buffer.pkl) of a run dir or zip."""
    p = Path(path).expanduser()
    if p.is_dir():
        p = p / "model.zip"
    if not p.is_file():
        raise ConfigError(f"trained_agent={path}: no such run dir or model .zip")
    if not zipfile.is_zipfile(p):
        raise ConfigError(f"trained_agent={path}: {p} is not an SB3 model .zip")
    return p, p.parent


def _recorded_algo(model_dir: Path) -> str | None:
    """The algorithm that rlexp recorded for a run dir (model.zip may sit in a subdir such as best/)."""
    for d in (model_dir, model_dir.parent, model_dir.parent.parent):
        summary = d / "summary.json"
        if summary.is_file():
            return json.loads(summary.read_text()).get("algo_class")
    return None


def load_model(cfg: DictConfig, path: str, env: VecEnv) -> BaseAlgorithm:
    """A saved model with its replay buffer (when saved), its step counter intact."""
    cls = algo_class(cfg)
    zip_path, model_dir = find_trained_agent(path)
    recorded = _recorded_algo(model_dir)
    if recorded is not None and recorded != cfg.algo._target_:
        raise ConfigError(f"trained_agent={path} holds a {recorded} agent, not algo={cfg.algo._target_}")
    try:
        model = cls.load(zip_path, env=env, device=resolve_device(cfg), print_system_info=False)
    except Exception as err:  # SB3 raises whatever the mismatch trips over
        raise ConfigError(
            f"trained_agent={path} cannot be loaded as {cls.__name__} (another algorithm?): {err}"
        ) from None
    model.set_random_seed(cfg.seed)
    buffer = model_dir / "replay_buffer.pkl"
    if isinstance(model, OffPolicyAlgorithm) and buffer.is_file():
        model.load_replay_buffer(buffer)
    return model
