"""Loads a saved agent and its replay buffer, unpickling what SB3 pickled with rlexp's allow-list only
(rlexp.rundir.pickles): a run dir may be someone else's."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from omegaconf import DictConfig
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm
from stable_baselines3.common.vec_env import VecEnv

from rlexp.builders.backends import algo_class, is_sbx
from rlexp.builders.device import resolve_device
from rlexp.builders.model import schedules
from rlexp.config.schema import AlgoConfig, Backend
from rlexp.errors import ConfigError, one_line_error
from rlexp.loading.spaces import aligned_spaces, check_spaces
from rlexp.rundir.agents import SavedAgent
from rlexp.rundir.pickles import model_objects, restricted_loads
from rlexp.rundir.trust import trusted_packages


def load_agent(
    zip_path: Path,
    device: str | None = None,
    env: VecEnv | None = None,
    trust: Iterable[str] = (),
    plays: VecEnv | None = None,
    *,
    algo: AlgoConfig,
    backend: Backend | str,
    torch_threads: int | None,
    run_device: str,
    lr_schedule: DictConfig,
    clip_range_schedule: DictConfig,
    env_id: str,
) -> BaseAlgorithm:
    """A saved agent of ``algo`` to act with (no replay buffer; ``env`` attached, if given): for the commands
    that read runs; on ``device``, by default the run's (``run_device``, its config's device). What SB3
    pickled into the zip is unpickled with rlexp's allow-list (and the packages in ``trust``) only
    (rlexp.rundir.pickles). ``plays``: the env it will act in (``env`` where given), whose spaces are
    checked against the agent's first; ``env_id``: the run's env.id. The other keywords are the run
    config's keys of those names."""
    cls = algo_class(algo, backend, torch_threads)
    objects = checked_objects(zip_path, trust, algo=algo, backend=backend, lr_schedule=lr_schedule,
                              clip_range_schedule=clip_range_schedule)  # fmt: skip
    played = plays if plays is not None else env
    if played is not None and objects is not None:
        check_spaces(objects, played, zip_path, str(env_id))
    if env is not None and objects is not None:  # (SB3 compares the spaces of an env it is given)
        objects = aligned_spaces(objects, env)[0]
    if objects is not None:
        objects = {**objects, **_acting_buffer(objects)}
    try:
        return cls.load(
            zip_path,
            env=env,
            device=device or resolve_device(run_device, algo, backend),
            custom_objects=objects,
            print_system_info=False,
        )
    except Exception as err:  # a damaged file, or another algorithm's
        raise ConfigError(f"{zip_path}: cannot be loaded as {cls.__name__} ({one_line_error(err)})") from None


def _acting_buffer(objects: dict[str, Any]) -> dict[str, Any]:
    """An agent that only acts needs no HER buffer, which SB3 cannot build without an env (and whose SB3 1.x
    kwargs, ``online_sampling``, SB3 2 no longer takes): SB3's default buffer stands in."""
    from stable_baselines3 import HerReplayBuffer

    buffer = objects.get("replay_buffer_class")
    if isinstance(buffer, type) and issubclass(buffer, HerReplayBuffer):
        return {"replay_buffer_class": None, "replay_buffer_kwargs": {}}
    return {}


def load_saved_agent(
    agent: SavedAgent, device: str | None = None, env: VecEnv | None = None, plays: VecEnv | None = None
) -> BaseAlgorithm:
    """A saved agent of a run (or an RL Zoo folder) to act with: ``load_agent`` with what its run's config
    says of it (algorithm, backend, schedules, device), and the packages its user trusts."""
    c = agent.cfg
    return load_agent(
        agent.model, device, env, agent.trust, plays, algo=c.algo, backend=c.backend, torch_threads=c.torch_threads,
        run_device=c.device, lr_schedule=c.lr_schedule, clip_range_schedule=c.clip_range_schedule, env_id=c.env.id,
    )  # fmt: skip


def checked_objects(
    zip_path: Path,
    trust: Iterable[str] = (),
    *,
    algo: AlgoConfig,
    backend: Backend | str,
    lr_schedule: DictConfig,
    clip_range_schedule: DictConfig,
) -> dict[str, Any] | None:
    """What SB3 pickled into a model zip of ``algo``, unpickled with the allow-list (rlexp.rundir.pickles);
    None (SB3's own unpickling) for an sbx agent the user trusts: sbx pickles its whole JAX policy, functions
    included, which no allow-list can open."""
    if is_sbx(backend):
        if "sbx" not in trusted_packages(trust):
            raise ConfigError(
                f"{zip_path}: trained with backend=sbx, which pickles its JAX policy whole (code included) into "
                "the zip: open it only if you trust the run's author, with --trust sbx (or RLEXP_TRUST=sbx)"
            )
        return None
    rebuilt = functools.partial(rebuilt_entries, algo, lr_schedule, clip_range_schedule)
    return {**model_objects(zip_path, trust, rebuilt), **_before_sb3_1(zip_path)}


def _before_sb3_1(zip_path: Path) -> dict[str, Any]:
    """SB3 0.x's off-policy rollouts, in SB3 2's terms: ``train_freq=-1`` with ``n_episodes_rollout=N`` was
    N episodes between updates (RL Zoo's SAC Pendulum-v1 agent), which SB3 2 reads as a frequency of -1 steps."""
    import json
    import zipfile

    from stable_baselines3.common.type_aliases import TrainFreq, TrainFrequencyUnit

    with zipfile.ZipFile(zip_path) as archive:  # (read once already: model_objects)
        data = json.loads(archive.read("data"))
    freq, episodes = data.get("train_freq"), data.get("n_episodes_rollout")
    if isinstance(freq, int) and freq <= 0 and isinstance(episodes, int) and episodes > 0:
        return {"train_freq": TrainFreq(episodes, TrainFrequencyUnit.EPISODE)}
    return {}


def rebuilt_entries(algo: AlgoConfig, lr_schedule: DictConfig, clip_range_schedule: DictConfig) -> dict[str, Any]:
    """What SB3 1.x pickled as functions (its schedules), built as a new model of ``algo`` on these schedules
    builds them: rlexp never unpickles code (rlexp.rundir.pickles), and to play an agent or train it on, these
    are all it needs."""
    from stable_baselines3.common.utils import FloatSchedule, LinearSchedule

    built = schedules(algo, lr_schedule, clip_range_schedule)
    out = {"learning_rate": built["learning_rate"], "lr_schedule": FloatSchedule(built["learning_rate"])}
    if "clip_range" in built:
        out["clip_range"] = built["clip_range"]
    # (the keys of some algorithms only, which the schema's AlgoConfig lacks: read as the config has them)
    if _key(algo, "clip_range_vf", None) is not None:  # (PPO makes it a schedule, as for a new model)
        out["clip_range_vf"] = float(_key(algo, "clip_range_vf"))
    if hasattr(algo, "delta_std"):  # (ARS)
        out["delta_std_schedule"] = FloatSchedule(float(_key(algo, "delta_std")))
    if hasattr(algo, "exploration_fraction"):  # (DQN, QR-DQN)
        out["exploration_schedule"] = LinearSchedule(
            *(_key(algo, k) for k in ("exploration_initial_eps", "exploration_final_eps", "exploration_fraction"))
        )
    return out


def _key(algo: AlgoConfig, name: str, *default: Any) -> Any:
    """A key of some algorithms only (not the schema's AlgoConfig's), as the config has it."""
    return getattr(algo, name, *default)


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
        buffer.set_env(model.env)  # type: ignore[arg-type]  # (an agent loaded to train has its env)
        buffer.truncate_last_trajectory()  # (as SB3's: the last episode ended with the run)
