"""The agent a run trains, and the VecNormalize statistics it starts from: a new one, the one it saved
before stopping (resume), or a trained agent it continues."""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm
from stable_baselines3.common.vec_env import VecEnv

from rlexp.builders.backends import algo_class, algo_target
from rlexp.builders.device import resolve_device
from rlexp.builders.model import build_model
from rlexp.config.schema import ActionNoiseConfig, AlgoConfig, Backend, EnvConfig
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


def agent_for_run(
    env: VecEnv,
    resume: Path | None,
    trained_agent: str | None,
    *,
    algo: AlgoConfig,
    backend: Backend | str,
    torch_threads: int | None,
    device: str,
    seed: int,
    lr_schedule: DictConfig,
    clip_range_schedule: DictConfig,
    action_noise: ActionNoiseConfig,
    verbose: int,
    env_cfg: EnvConfig,
) -> BaseAlgorithm:
    """The agent a run trains: the one it saved before stopping (``resume``), the trained agent it continues
    (``trained_agent``), or a new one (rlexp.builders.model.build_model, which the keywords are for)."""
    if trained_agent is None and resume is None:
        return build_model(
            env, algo, backend=backend, torch_threads=torch_threads, device=device, seed=seed, lr_schedule=lr_schedule,
            clip_range_schedule=clip_range_schedule, action_noise=action_noise, verbose=verbose, env_cfg=env_cfg,
        )  # fmt: skip
    model = load_model(
        str(resume) if resume is not None else str(trained_agent), env, restricted=resume is None, algo=algo,
        backend=backend, torch_threads=torch_threads, device=device, seed=seed, lr_schedule=lr_schedule,
        clip_range_schedule=clip_range_schedule,
    )  # fmt: skip
    if resume is not None:  # new episodes and exploration noise, not a replay of the run's first ones
        model.set_random_seed(seed + int(model.num_timesteps))
    return model


def normalization_for_run(trained_agent: str | None, normalize: bool, resume: Path | None) -> Path | None:
    """The VecNormalize statistics a run's train env starts from: its resume agent's, or the trained agent's
    (``trained_agent``, checked against ``normalize``, env.normalize)."""
    if resume is None:
        return trained_agent_stats(trained_agent, normalize)
    stats = resume / VECNORMALIZE_FILE
    return stats if stats.is_file() else None
