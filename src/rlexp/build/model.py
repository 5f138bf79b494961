"""Builds a new SB3 model from the `algo` config, or loads a trained one to continue training.

Each failure is turned into one line naming the config key that caused it; the front door runs these
builders on a one-env probe before a run dir exists.
"""

from __future__ import annotations

import functools
import inspect
import re
import zipfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from hydra.utils import get_class, instantiate
from omegaconf import DictConfig, OmegaConf
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm
from stable_baselines3.common.vec_env import VecEnv

from rlexp.build.backends import algo_target, import_sbx, is_sbx, sbx_keywords
from rlexp.build.noise import build_action_noise
from rlexp.build.schedules import CONSTANT
from rlexp.cluster.cpus import job_threads
from rlexp.errors import ConfigError, collapsed, one_line_error
from rlexp.rundir.contract import MODEL_FILE, REPLAY_BUFFER_FILE, VECNORMALIZE_FILE
from rlexp.rundir.pickles import model_objects, restricted_loads
from rlexp.rundir.record import read_record
from rlexp.rundir.trust import trusted_packages

# replay buffer of the front door's probe model: the configured size is checked, not allocated
PROBE_BUFFER_SIZE = 1_000


def algo_class(cfg: DictConfig) -> type[BaseAlgorithm]:
    """The class that trains: the algo config's SB3 class, or its sbx counterpart under backend=sbx."""
    target = algo_target(cfg)
    if is_sbx(cfg):
        import_sbx(job_threads(cfg.torch_threads))
    try:
        cls = get_class(target)
    except Exception as err:
        raise ConfigError(f"algo._target_={target}: {one_line_error(err)}") from None
    if not (isinstance(cls, type) and issubclass(cls, BaseAlgorithm)):
        raise ConfigError(f"algo._target_={target} is not an SB3 algorithm class")
    return cls


def check_device(device: str, here: bool = True) -> None:
    """``auto``, ``cpu``, ``cuda[:N]`` or ``mps``; ``here``: and present on this machine (not asked where
    the jobs run elsewhere, e.g. a GPU SLURM job submitted from a login node)."""
    import torch

    if device == "auto":
        return
    try:
        dev = torch.device(device)
    except RuntimeError:
        dev = None
    if dev is None or dev.type not in ("cpu", "cuda", "mps"):
        raise ConfigError(f"device={device}: not a device; choose auto, cpu, cuda, cuda:N or mps")
    if not here:
        return
    present = ["cpu"] + [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    if torch.backends.mps.is_available():
        present.append("mps")
    wanted = f"{dev.type}:{dev.index or 0}" if dev.type == "cuda" else dev.type
    if wanted not in present:
        raise ConfigError(f"device={device}: not available on this machine (present: {', '.join(present)})")


def resolve_device(cfg: DictConfig) -> str:
    """``auto`` keeps MLP policies of on-policy algorithms on the CPU, where they run faster."""
    if cfg.device != "auto":
        return cfg.device
    if is_sbx(cfg):  # JAX places the networks itself; SB3's part (buffers) stays on the CPU
        return "cpu"
    if issubclass(algo_class(cfg), OffPolicyAlgorithm) or cfg.algo.policy.startswith("Cnn"):
        return "auto"
    return "cpu"


def check_policy(cfg: DictConfig) -> None:
    cls = algo_class(cfg)
    names = sorted(getattr(cls, "policy_aliases", {}))
    if cfg.algo.policy not in names:
        raise ConfigError(f"algo.policy={cfg.algo.policy}: not a policy of {cls.__name__} (choose {', '.join(names)})")


def _schedule(cfg: DictConfig, key: str, initial: float) -> Any:
    """The schedule of ``key`` (lr_schedule, clip_range_schedule), checked at the start and end of training."""
    try:
        schedule = instantiate(cfg[key], initial=initial)
        values = [float(schedule(1.0)), float(schedule(0.0))]
    except ConfigError:
        raise
    except Exception as err:
        raise ConfigError(f"{key}: {one_line_error(err)}") from None
    if not all(v >= 0 and v == v and v != float("inf") for v in values):
        raise ConfigError(f"{key}: goes from {values[0]} to {values[1]}; a schedule must stay finite and >= 0")
    return schedule


def _schedules(cfg: DictConfig) -> dict[str, Any]:
    params = {"learning_rate": _schedule(cfg, "lr_schedule", cfg.algo.learning_rate)}
    if "clip_range" in cfg.algo:
        params["clip_range"] = _schedule(cfg, "clip_range_schedule", cfg.algo.clip_range)
    elif cfg.clip_range_schedule._target_ != CONSTANT:
        raise ConfigError(f"clip_range_schedule: algo={cfg.algo._target_} has no clip_range to schedule")
    return params


def _named_key(cfg: DictConfig, text: str, fallback: str) -> str:
    """The algo key an SB3 error message names (`batch_size`, n_steps=0), else ``fallback``."""
    for name in re.findall(r"`(\w+)`|\b(\w+)=", text):
        name = next(n for n in name if n)
        if name in cfg.algo:
            return f"algo.{name}"
        if name == "n_envs":
            return "env.n_envs"
    return fallback


def build_model(cfg: DictConfig, env: VecEnv, probe: bool = False) -> BaseAlgorithm:
    """A new model; refuses an algorithm that cannot act in the env before any env step.

    ``probe``: the front door's check (CPU, quiet, a small replay buffer) of what the run will build;
    its failures become one line naming the config key.
    """
    cls = algo_class(cfg)
    check_policy(cfg)
    make = instantiate(cfg.algo, _partial_=True, _convert_="all")
    if isinstance(make.keywords.get("train_freq"), list):  # YAML has no tuples: [1, episode]
        make.keywords["train_freq"] = tuple(make.keywords["train_freq"])
    if probe and "buffer_size" in make.keywords:
        make.keywords["buffer_size"] = min(make.keywords["buffer_size"], PROBE_BUFFER_SIZE)
    if is_sbx(cfg):  # (its device and schedule: rlexp.run.front_door.check_static)
        make = functools.partial(cls, *make.args, **sbx_keywords(cfg, cls, make.keywords))
    extra: dict[str, Any] = _schedules(cfg)
    noise = build_action_noise(cfg.action_noise, env.action_space)
    if noise is not None:
        if "action_noise" not in inspect.signature(cls).parameters:
            raise ConfigError(f"action_noise: {cls.__name__} takes no action noise (use action_noise.kind=none)")
        extra["action_noise"] = noise
    device = "cpu" if probe else resolve_device(cfg)
    verbose = 0 if probe else int(cfg.logger.verbose >= 2)  # SB3's own messages and tables
    try:  # (its warnings: the front door's, recorded with the run's, rlexp.run.library_warnings)
        model = make(env=env, seed=cfg.seed, device=device, verbose=verbose, _init_setup_model=False, **extra)
    except Exception as err:
        if not probe:  # the front door built this config: anything else is not the config's fault
            raise
        text = collapsed(err)
        if isinstance(err, AssertionError) and "action spaces" in text:
            from rlexp.config.env_routing import variants

            supported = ", ".join(re.findall(r"<class '[\w.]+\.(\w+)'>", text.split(" but ")[0]))
            other = variants(cfg.env.id, OmegaConf.to_container(cfg.env.kwargs))
            raise ConfigError(
                f"algo {cls.__name__} cannot act in env.id={cfg.env.id}: its action space is "
                f"{type(env.action_space).__name__} and {cls.__name__} supports only {supported}"
                + (f" (other versions of {cfg.env.id}: {', '.join('env=' + name for name in other)})" if other else "")
            ) from None
        raise ConfigError(f"{_named_key(cfg, text, 'algo')}: {cls.__name__} refuses it ({text})") from None
    try:
        model._setup_model()
    except Exception as err:
        if not probe:
            raise
        raise ConfigError(f"{_setup_key(cfg, model)}: {one_line_error(err)}") from None
    return model


def _setup_key(cfg: DictConfig, model: BaseAlgorithm) -> str:
    """Which config part broke SB3's _setup_model: the replay buffer (built first) or the policy."""
    if isinstance(model, OffPolicyAlgorithm) and getattr(model, "replay_buffer", None) is None:
        for key in ("replay_buffer_class", "replay_buffer_kwargs"):
            if cfg.algo.get(key):
                return f"algo.{key}"
        return "algo.buffer_size"
    return "algo.policy_kwargs" if cfg.algo.policy_kwargs else "algo.policy"


def find_trained_agent(path: str) -> tuple[Path, Path]:
    """(model zip, directory holding its vecnormalize.pkl / replay_buffer.pkl) of a run dir or zip."""
    p = Path(path).expanduser()
    if p.is_dir():
        p = p / MODEL_FILE
    if not p.is_file():
        raise ConfigError(f"trained_agent={path}: no such run dir or model .zip")
    if not zipfile.is_zipfile(p):
        raise ConfigError(f"trained_agent={path}: {p} is not an SB3 model .zip")
    return p, p.parent


def _recorded_algo(model_dir: Path) -> str | None:
    """The algorithm that rlexp recorded for a run dir (model.zip may sit in a subdir such as best/)."""
    for d in (model_dir, model_dir.parent, model_dir.parent.parent):
        record = read_record(d, remedy="fix or remove it")
        if record is not None:
            return record.algo_class or None
    return None


def _refuse_another_algo(cfg: DictConfig, path: str, model_dir: Path) -> None:
    recorded, wanted = _recorded_algo(model_dir), algo_target(cfg)
    if recorded is None or recorded == wanted:
        return
    if recorded.startswith("sbx.") != wanted.startswith("sbx."):
        trained_with = "sbx" if recorded.startswith("sbx.") else "sb3"
        if recorded.rsplit(".", 1)[-1] == wanted.rsplit(".", 1)[-1]:
            raise _other_backend(path, trained_with)
    raise ConfigError(f"trained_agent={path} holds a {recorded} agent, not algo={wanted}")


def _other_backend(path: str, trained_with: str) -> ConfigError:
    return ConfigError(f"trained_agent={path} was trained with backend={trained_with}: add backend={trained_with}")


def trained_agent_stats(cfg: DictConfig) -> Path | None:
    """The VecNormalize statistics of the agent to continue, checked against env.normalize."""
    if cfg.trained_agent is None:
        return None
    stats = find_trained_agent(cfg.trained_agent)[1] / VECNORMALIZE_FILE
    if stats.is_file() != bool(cfg.env.normalize):
        raise ConfigError(
            f"trained_agent={cfg.trained_agent} was trained with{'' if stats.is_file() else 'out'} "
            f"VecNormalize; set env.normalize={str(stats.is_file()).lower()}"
        )
    return stats if stats.is_file() else None


def observation_warnings(cfg: DictConfig, env: VecEnv) -> list[str]:
    """An MLP policy on image observations: a run that can start but rarely learns (raw pixels flattened)."""
    from stable_baselines3.common.preprocessing import is_image_space

    policy = str(cfg.algo.policy)
    if policy.startswith("Mlp") and is_image_space(env.observation_space, check_channels=False):
        shape = "x".join(str(n) for n in env.observation_space.shape)  # type: ignore[union-attr]
        return [
            f"algo.policy={policy} on image observations ({shape}) of {cfg.env.id}: an MLP on raw pixels rarely "
            f"learns; algo.policy={policy.replace('Mlp', 'Cnn')} fits images"
        ]
    return []


def check_trained_agent(cfg: DictConfig, env: VecEnv) -> list[str]:
    """The agent to continue: there, of this algorithm, made for the env's spaces, with matching
    normalization. Returns warnings (an off-policy agent without its replay buffer)."""
    from stable_baselines3.common.save_util import load_from_zip_file

    cls = algo_class(cfg)
    path = cfg.trained_agent
    zip_path, model_dir = find_trained_agent(path)
    _refuse_another_algo(cfg, path, model_dir)
    objects = _checked_objects(cfg, zip_path)  # (another's run: its pickles with the allow-list only)
    stats = model_dir / VECNORMALIZE_FILE
    if stats.is_file():
        restricted_loads(stats.read_bytes(), str(stats))
    try:
        data, _, _ = load_from_zip_file(zip_path, device="cpu", custom_objects=objects, print_system_info=False)
    except Exception as err:
        raise ConfigError(f"trained_agent={path}: {zip_path} cannot be read as an SB3 model ({err})") from None
    policy = (data or {}).get("policy_class")
    if isinstance(policy, type):
        trained_with = "sbx" if policy.__module__.split(".")[0] == "sbx" else "sb3"
        if trained_with != ("sbx" if is_sbx(cfg) else "sb3"):
            raise _other_backend(path, trained_with)
    policies = tuple(getattr(cls, "policy_aliases", {}).values())
    if isinstance(policy, type) and policies and not issubclass(policy, policies):
        raise ConfigError(
            f"trained_agent={path} cannot be loaded as {cls.__name__} (another algorithm?): "
            f"its policy is a {policy.__name__}"
        )
    for space in ("observation_space", "action_space"):
        if space in data and data[space] != getattr(env, space):
            raise ConfigError(
                f"trained_agent={path} was trained on the {space.replace('_', ' ')} {_describe(data[space])}, "
                f"but env.id={cfg.env.id} has {_describe(getattr(env, space))}"
            )
    trained_agent_stats(cfg)
    if issubclass(cls, OffPolicyAlgorithm) and not (model_dir / REPLAY_BUFFER_FILE).is_file():
        return [
            f"trained_agent={path} brings no replay buffer: {cls.__name__} continues from an empty one "
            "(runs keep theirs with callbacks.checkpoint.save_replay_buffer=true)"
        ]
    return []


def _describe(space: Any) -> str:
    shape = getattr(space, "shape", None)
    return f"{type(space).__name__}{shape}" if type(space).__name__ == "Box" else str(space)[:200]


def load_agent(
    cfg: DictConfig, zip_path: Path, device: str | None = None, env: VecEnv | None = None, trust: Iterable[str] = ()
) -> BaseAlgorithm:
    """A saved agent to act with (no replay buffer; ``env`` attached, if given): for the commands that
    read runs; on ``device``, by default the run's. What SB3 pickled into the zip is unpickled with
    rlexp's allow-list (and the packages in ``trust``) only (rlexp.rundir.pickles)."""
    cls = algo_class(cfg)
    objects = _checked_objects(cfg, zip_path, trust)
    try:
        return cls.load(
            zip_path, env=env, device=device or resolve_device(cfg), custom_objects=objects, print_system_info=False
        )
    except Exception as err:  # a damaged file, or another algorithm's
        raise ConfigError(f"{zip_path}: cannot be loaded as {cls.__name__} ({one_line_error(err)})") from None


def _checked_objects(cfg: DictConfig, zip_path: Path, trust: Iterable[str] = ()) -> dict[str, Any] | None:
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


def load_model(cfg: DictConfig, path: str, env: VecEnv, restricted: bool = True) -> BaseAlgorithm:
    """A saved model with its replay buffer (when saved), its step counter intact. ``restricted``: what SB3
    pickled into the zip is unpickled with rlexp's allow-list (and RLEXP_TRUST's packages) only, as for a
    run that someone else may have written (trained_agent=); a run resuming in its own dir is not."""
    cls = algo_class(cfg)
    zip_path, model_dir = find_trained_agent(path)
    _refuse_another_algo(cfg, path, model_dir)
    objects = _checked_objects(cfg, zip_path) if restricted else None
    try:
        model = cls.load(zip_path, env=env, device=resolve_device(cfg), custom_objects=objects, print_system_info=False)
    except Exception as err:  # SB3 raises whatever the mismatch trips over
        raise ConfigError(
            f"trained_agent={path} cannot be loaded as {cls.__name__} (another algorithm?): {err}"
        ) from None
    model.set_random_seed(cfg.seed)
    buffer = model_dir / REPLAY_BUFFER_FILE
    if isinstance(model, OffPolicyAlgorithm) and buffer.is_file():
        if restricted:
            _load_replay_buffer(model, buffer)
        else:
            model.load_replay_buffer(buffer)
    return model


def _load_replay_buffer(model: OffPolicyAlgorithm, path: Path) -> None:
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
