"""A saved agent a run trains on (the one it saved before stopping, or a trained agent it continues) and the
VecNormalize statistics it starts from; which one, or a new agent, rlexp.run.manager chooses."""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm
from stable_baselines3.common.vec_env import VecEnv

from rlexp.builders.backends import algo_class, algo_target
from rlexp.builders.device import resolve_device
from rlexp.config.schema import AlgoConfig, Backend
from rlexp.errors import ConfigError
from rlexp.loading.agent import checked_objects, load_replay_buffer
from rlexp.loading.spaces import aligned_spaces
from rlexp.loading.trained_agent import find_trained_agent, refuse_another_algo, trained_agent_stats
from rlexp.rundir.contract import VECNORMALIZE_FILE
from rlexp.rundir.pickles import moved_objects


def load_model(
    path: str,
    env: VecEnv,
    restricted: bool = True,
    *,
    algo: AlgoConfig,
    backend: Backend | str,
    torch_threads: int | None,
    device: str,
    seed: int,
    lr_schedule: DictConfig,
    clip_range_schedule: DictConfig,
) -> BaseAlgorithm:
    """A saved model of ``algo`` with its replay buffer (when saved), its step counter intact. ``restricted``:
    what SB3 pickled into the zip is unpickled with rlexp's allow-list (and RLEXP_TRUST's packages) only, as
    for a run that someone else may have written (trained_agent=); a run resuming in its own dir is not. The
    keywords are the config's keys of those names."""
    cls = algo_class(algo, backend, torch_threads)
    files = find_trained_agent(path)
    zip_path = files.zip
    refuse_another_algo(algo_target(algo, backend), path, zip_path.parent)
    objects = (
        checked_objects(
            zip_path, algo=algo, backend=backend, lr_schedule=lr_schedule, clip_range_schedule=clip_range_schedule
        )
        if restricted
        else moved_objects(zip_path)
    )
    if objects is not None:
        objects = aligned_spaces(objects, env)[0]  # (check_trained_agent said so)
    try:
        model = cls.load(
            zip_path,
            env=env,
            device=resolve_device(device, algo, backend),
            custom_objects=objects,
            print_system_info=False,
        )
    except Exception as err:  # SB3 raises whatever the mismatch trips over
        raise ConfigError(
            f"trained_agent={path} cannot be loaded as {cls.__name__} (another algorithm?): {err}"
        ) from None
    model.set_random_seed(seed)
    buffer = files.buffer
    if isinstance(model, OffPolicyAlgorithm) and buffer.is_file():
        if restricted:
            load_replay_buffer(model, buffer)
        else:
            model.load_replay_buffer(buffer)
    return model


def normalization_for_run(trained_agent: str | None, normalize: bool, resume: Path | None) -> Path | None:
    """The VecNormalize statistics a run's train env starts from: its resume agent's, or the trained agent's
    (``trained_agent``, checked against ``normalize``, env.normalize)."""
    if resume is None:
        return trained_agent_stats(trained_agent, normalize)
    stats = resume / VECNORMALIZE_FILE
    return stats if stats.is_file() else None
