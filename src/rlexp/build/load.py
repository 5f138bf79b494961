"""Loads a saved agent and its replay buffer, unpickling what SB3 pickled with rlexp's allow-list only
(rlexp.rundir.pickles): a run dir may be someone else's."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from omegaconf import DictConfig
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm
from stable_baselines3.common.vec_env import VecEnv

from rlexp.build.backends import algo_class, is_sbx
from rlexp.build.device import resolve_device
from rlexp.errors import ConfigError, one_line_error
from rlexp.rundir.pickles import model_objects, restricted_loads
from rlexp.rundir.trust import trusted_packages


def load_agent(
    cfg: DictConfig, zip_path: Path, device: str | None = None, env: VecEnv | None = None, trust: Iterable[str] = ()
) -> BaseAlgorithm:
    """A saved agent to act with (no replay buffer; ``env`` attached, if given): for the commands that
    read runs; on ``device``, by default the run's. What SB3 pickled into the zip is unpickled with
    rlexp's allow-list (and the packages in ``trust``) only (rlexp.rundir.pickles)."""
    cls = algo_class(cfg)
    objects = checked_objects(cfg, zip_path, trust)
    try:
        return cls.load(
            zip_path, env=env, device=device or resolve_device(cfg), custom_objects=objects, print_system_info=False
        )
    except Exception as err:  # a damaged file, or another algorithm's
        raise ConfigError(f"{zip_path}: cannot be loaded as {cls.__name__} ({one_line_error(err)})") from None


def checked_objects(cfg: DictConfig, zip_path: Path, trust: Iterable[str] = ()) -> dict[str, Any] | None:
    """What SB3 pickled into a model zip, unpickled with the allow-list (rlexp.rundir.pickles); None (SB3's
    own unpickling) for an sbx agent the user trusts: sbx pickles its whole JAX policy, functions included,
    which no allow-list can open."""
    if is_sbx(cfg):
        if "sbx" not in trusted_packages(trust):
            raise ConfigError(
                f"{zip_path}: trained with backend=sbx, which pickles its JAX policy whole (code included) into "
                "the zip: open it only if you trust the run's author, with --trust sbx (or RLEXP_TRUST=sbx)"
            )
        return None
    return model_objects(zip_path, trust)


def load_replay_buffer(model: OffPolicyAlgorithm, path: Path) -> None:
    """SB3's ``load_replay_buffer``, unpickled with the allow-list only (rlexp.rundir.pickles)."""
    from stable_baselines3 import HerReplayBuffer
    from stable_baselines3.common.buffers import ReplayBuffer

    buffer = restricted_loads(path.read_bytes(), str(path))
    if not isinstance(buffer, ReplayBuffer):
        raise ConfigError(f"{path}: holds a {type(buffer).__name__}, not a replay buffer")
    buffer.device = model.device  # (as SB3's: an agent trained on a GPU continues on this device)
    model.replay_buffer = buffer
    if isinstance(buffer, HerReplayBuffer):
        buffer.set_env(model.env)
        buffer.truncate_last_trajectory()  # (as SB3's: the last episode ended with the run)
