"""Vets the trained agent a run continues from (``trained_agent=``), which may be someone else's: there, of
this algorithm and backend, made for the env's spaces, with matching normalization."""

from __future__ import annotations

import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig
from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm
from stable_baselines3.common.vec_env import VecEnv

from rlexp.builders.backends import algo_class, algo_target, is_sbx
from rlexp.config.schema import AlgoConfig, Backend
from rlexp.errors import ConfigError
from rlexp.lifecycle.state import Unfinished, unfinished
from rlexp.loading.agent import checked_objects
from rlexp.loading.spaces import aligned_spaces
from rlexp.rundir.agents import FINAL
from rlexp.rundir.contract import MODEL_FILE, REPLAY_BUFFER_FILE, VECNORMALIZE_FILE
from rlexp.rundir.pickles import restricted_loads
from rlexp.rundir.record import read_record
from rlexp.zoo.log_folders import zoo_config_dict
from rlexp.zoo.path_kinds import what_is


@dataclass(frozen=True)
class TrainedAgentFiles:
    """A trained agent's files: its zip, and where its VecNormalize statistics and replay buffer are when saved."""

    zip: Path
    stats: Path
    buffer: Path


def find_trained_agent(path: str) -> TrainedAgentFiles:
    """The files of the agent of a run dir or zip, or of an RL Zoo log folder (its final agent, or the zip given:
    the statistics the zoo's enjoy takes with it, the replay buffer the zoo saves beside it)."""
    p = Path(path).expanduser()
    zoo = what_is(p).zoo
    if zoo is not None:
        agents = zoo.agents()
        name = zoo.agent_of_zip(p) if p.is_file() else FINAL
        if name not in agents:
            raise ConfigError(f"trained_agent={path}: the RL Zoo run has no {zoo.env_name}.zip (its final agent)")
        zip_path, stats = agents[name]
        return TrainedAgentFiles(zip_path, stats or zoo.files_dir / VECNORMALIZE_FILE, zoo.folder / REPLAY_BUFFER_FILE)
    if p.is_dir():
        if not (p / MODEL_FILE).is_file() and (left := _unfinished_run(p)) is not None:
            raise ConfigError(f"trained_agent={path}: no final agent: {left}")
        p = p / MODEL_FILE
    if not p.is_file():
        raise ConfigError(f"trained_agent={path}: no such run dir or model .zip")
    if not zipfile.is_zipfile(p):
        raise ConfigError(f"trained_agent={path}: {p} is not an SB3 model .zip")
    return TrainedAgentFiles(p, p.parent / VECNORMALIZE_FILE, p.parent / REPLAY_BUFFER_FILE)


def _unfinished_run(run_dir: Path) -> Unfinished | None:
    """The run in ``run_dir`` when it died or was stopped before it saved its final agent."""
    record = read_record(run_dir, remedy="fix or remove it") if what_is(run_dir).configured else None
    return None if record is None else unfinished(record, run_dir)


def _recorded_algo(model_dir: Path) -> str | None:
    """The algorithm that rlexp recorded for a run dir (model.zip may sit in a subdir such as best/), or that an
    RL Zoo log folder's args.yml names."""
    zoo = what_is(model_dir).zoo
    if zoo is not None:
        return str(zoo_config_dict(zoo)["algo"]["_target_"])
    for d in (model_dir, model_dir.parent, model_dir.parent.parent):
        record = read_record(d, remedy="fix or remove it")
        if record is not None:
            return record.algo_class or None
    return None


def refuse_another_algo(wanted: str, path: str, model_dir: Path) -> None:
    """The agent in ``model_dir`` (of trained_agent=``path``) is one of the class ``wanted`` (algo_target's)."""
    recorded = _recorded_algo(model_dir)
    if recorded is None or recorded == wanted:
        return
    if recorded.startswith("sbx.") != wanted.startswith("sbx."):
        trained_with = "sbx" if recorded.startswith("sbx.") else "sb3"
        if recorded.rsplit(".", 1)[-1] == wanted.rsplit(".", 1)[-1]:
            raise _other_backend(path, trained_with)
    raise ConfigError(f"trained_agent={path} holds a {recorded} agent, not algo={wanted}")


def _other_backend(path: str, trained_with: str) -> ConfigError:
    return ConfigError(f"trained_agent={path} was trained with backend={trained_with}: add backend={trained_with}")


def trained_agent_stats(trained_agent: str | None, normalize: bool) -> Path | None:
    """The VecNormalize statistics of the agent to continue (``trained_agent``), checked against
    ``normalize`` (env.normalize)."""
    if trained_agent is None:
        return None
    stats = find_trained_agent(trained_agent).stats
    if stats.is_file() != bool(normalize):
        raise ConfigError(
            f"trained_agent={trained_agent} was trained with{'' if stats.is_file() else 'out'} "
            f"VecNormalize; set env.normalize={str(stats.is_file()).lower()}"
        )
    return stats if stats.is_file() else None


def check_trained_agent(
    path: str,
    env: VecEnv,
    *,
    algo: AlgoConfig,
    backend: Backend | str,
    torch_threads: int | None,
    lr_schedule: DictConfig,
    clip_range_schedule: DictConfig,
    env_id: str,
    normalize: bool,
) -> list[str]:
    """The agent to continue (trained_agent=``path``): there, of ``algo``, made for the env's spaces, with
    matching normalization (``normalize``: env.normalize; ``env_id``: env.id; the other keywords are the
    config's keys of those names). Returns warnings (an off-policy agent without its replay buffer)."""
    from stable_baselines3.common.save_util import load_from_zip_file

    cls = algo_class(algo, backend, torch_threads)
    files = find_trained_agent(path)
    zip_path, stats = files.zip, files.stats
    refuse_another_algo(algo_target(algo, backend), path, zip_path.parent)
    objects = checked_objects(  # (another's run: its pickles with the allow-list only)
        zip_path, algo=algo, backend=backend, lr_schedule=lr_schedule, clip_range_schedule=clip_range_schedule
    )
    if stats.is_file():
        restricted_loads(stats.read_bytes(), str(stats))
    try:
        data, _, _ = load_from_zip_file(zip_path, device="cpu", custom_objects=objects, print_system_info=False)
    except Exception as err:
        raise ConfigError(f"trained_agent={path}: {zip_path} cannot be read as an SB3 model ({err})") from None
    if data is None:  # (a zip without SB3's data file)
        raise ConfigError(f"trained_agent={path}: {zip_path} cannot be read as an SB3 model (it holds no data)")
    policy = data.get("policy_class")
    if isinstance(policy, type):
        trained_with = "sbx" if policy.__module__.split(".")[0] == "sbx" else "sb3"
        if trained_with != ("sbx" if is_sbx(backend) else "sb3"):
            raise _other_backend(path, trained_with)
    policies = tuple(getattr(cls, "policy_aliases", {}).values())
    if isinstance(policy, type) and policies and not issubclass(policy, policies):
        raise ConfigError(
            f"trained_agent={path} cannot be loaded as {cls.__name__} (another algorithm?): "
            f"its policy is a {policy.__name__}"
        )
    said = [f"trained_agent={path}: {line}" for line in aligned_spaces(data, env)[1]]
    for space in ("observation_space", "action_space"):
        if space in data and data[space] != getattr(env, space) and not (space == "observation_space" and said):
            raise ConfigError(
                f"trained_agent={path} was trained on the {space.replace('_', ' ')} {_describe(data[space])}, "
                f"but env.id={env_id} has {_describe(getattr(env, space))}"
            )
    trained_agent_stats(path, normalize)
    if issubclass(cls, OffPolicyAlgorithm) and not files.buffer.is_file():
        said.append(
            f"trained_agent={path} brings no replay buffer: {cls.__name__} continues from an empty one "
            "(runs keep theirs with callbacks.checkpoint.save_replay_buffer=true)"
        )
    return said


def _describe(space: Any) -> str:
    shape = getattr(space, "shape", None)
    return f"{type(space).__name__}{shape}" if type(space).__name__ == "Box" else str(space)[:200]
