"""The agent a run trains, and the VecNormalize statistics it starts from: a new one, the one it saved
before stopping (resume), or a trained agent it continues."""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm
from stable_baselines3.common.vec_env import VecEnv

from rlexp.builders.backends import algo_class
from rlexp.builders.device import resolve_device
from rlexp.builders.model import build_model
from rlexp.errors import ConfigError
from rlexp.loading.agent import checked_objects, load_replay_buffer
from rlexp.loading.spaces import aligned_spaces
from rlexp.loading.trained_agent import find_trained_agent, refuse_another_algo, trained_agent_stats
from rlexp.rundir.contract import VECNORMALIZE_FILE
from rlexp.rundir.pickles import moved_objects


def load_model(cfg: DictConfig, path: str, env: VecEnv, restricted: bool = True) -> BaseAlgorithm:
    """A saved model with its replay buffer (when saved), its step counter intact. ``restricted``: what SB3
    pickled into the zip is unpickled with rlexp's allow-list (and RLEXP_TRUST's packages) only, as for a
    run that someone else may have written (trained_agent=); a run resuming in its own dir is not."""
    cls = algo_class(cfg)
    files = find_trained_agent(path)
    zip_path = files.zip
    refuse_another_algo(cfg, path, zip_path.parent)
    objects = checked_objects(cfg, zip_path) if restricted else moved_objects(zip_path)
    if objects is not None:
        objects = aligned_spaces(objects, env)[0]  # (check_trained_agent said so)
    try:
        model = cls.load(zip_path, env=env, device=resolve_device(cfg), custom_objects=objects, print_system_info=False)
    except Exception as err:  # SB3 raises whatever the mismatch trips over
        raise ConfigError(
            f"trained_agent={path} cannot be loaded as {cls.__name__} (another algorithm?): {err}"
        ) from None
    model.set_random_seed(cfg.seed)
    buffer = files.buffer
    if isinstance(model, OffPolicyAlgorithm) and buffer.is_file():
        if restricted:
            load_replay_buffer(model, buffer)
        else:
            model.load_replay_buffer(buffer)
    return model


def agent_for_run(cfg: DictConfig, env: VecEnv, resume: Path | None) -> BaseAlgorithm:
    """The agent a run trains: the one it saved before stopping (``resume``), the trained agent it continues
    (``trained_agent``), or a new one."""
    if resume is not None:
        model = load_model(cfg, str(resume), env, restricted=False)
        # new episodes and exploration noise, not a replay of the run's first ones
        model.set_random_seed(cfg.seed + int(model.num_timesteps))
        return model
    if cfg.trained_agent is None:
        return build_model(cfg, env)
    return load_model(cfg, cfg.trained_agent, env)


def normalization_for_run(cfg: DictConfig, resume: Path | None) -> Path | None:
    """The VecNormalize statistics a run's train env starts from: its resume agent's, or the trained agent's."""
    if resume is None:
        return trained_agent_stats(cfg)
    stats = resume / VECNORMALIZE_FILE
    return stats if stats.is_file() else None
