"""EnvPool (C++ envs stepped on a thread pool) behind SB3's VecEnv, with SB3's semantics.

EnvPool resets a finished env on its next step, ignoring that step's action; SB3 expects the reset
observation on the same step and the terminal one in ``info["terminal_observation"]``. So when envs
finish, this class steps just those envs once more at once (EnvPool's ``step(actions, env_id)``): that
step is EnvPool's own reset, a new game or, after a lost life under ``episodic_life``, the same game
going on, as SB3's EpisodicLifeEnv does. Env i is seeded ``seed + i`` as SB3 seeds its envs, though
EnvPool's random streams are its own: the same seed gives other start states than gymnasium's envs.

Atari: SB3's AtariWrapper and frame stack are mapped to EnvPool's own preprocessing (``atari_config``);
docs/guides/train.md says where the two differ. Episode statistics (``info["episode"]``, the monitor
files) count the game's unclipped score and its agent steps, where SB3's Monitor under AtariWrapper counts
emulator frames."""

from __future__ import annotations

import re
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from stable_baselines3.common.vec_env.base_vec_env import VecEnvObs, VecEnvStepReturn

from rlexp.cluster.cpus import job_cpus
from rlexp.config.env_families import family_named
from rlexp.config.schema import EnvConfig
from rlexp.errors import ConfigError
from rlexp.vecenvs.batched import BatchedVecEnv
from rlexp.vecenvs.episodes import EpisodeStats

# AtariWrapper's arguments (and defaults) -> EnvPool's Atari options
ATARI_OPTIONS = {
    "noop_max": ("noop_max", 30),
    "frame_skip": ("frame_skip", 4),
    "terminal_on_life_loss": ("episodic_life", True),
    "clip_reward": ("reward_clip", True),
}
# gymnasium ALE kwargs EnvPool takes under the same name; frameskip=1 is rlexp's atari preset (AtariWrapper skips)
ALE_KWARGS = ("repeat_action_probability", "full_action_space")
UNUSED = "EnvPool cannot take it"
RESERVED = {"num_envs", "batch_size", "num_threads", "seed", "env_seed", "stack_num"}  # (set by rlexp)


@contextmanager
def _without_jax() -> Iterator[None]:
    """EnvPool imports JAX (a second here) for its XLA interface, which rlexp never uses, whenever JAX is
    installed (the sbx extra), as it imports or defines an env class; it does without when JAX cannot be
    imported. So JAX is made unimportable meanwhile, unless it is imported already (backend=sbx)."""
    if "jax" in sys.modules:
        yield
        return
    sys.modules["jax"] = None  # type: ignore[assignment]  # (None there makes an import fail: Python's way)
    try:
        yield
    finally:
        if sys.modules.get("jax", False) is None:
            del sys.modules["jax"]


def _import_envpool() -> Any:
    try:
        with _without_jax():
            import envpool
    except ImportError:
        raise ConfigError(
            "env.vec_env=envpool needs EnvPool: pip install 'rlexp[envpool]' (or env.vec_env=auto)"
        ) from None
    return envpool


def atari_task(env_cfg: EnvConfig) -> bool:
    """Whether EnvPool builds the env as its Atari task: its family's preprocessing (the preset's AtariWrapper
    and frame stack) done by EnvPool (rlexp.config.env_families, ``envpool_atari``)."""
    family = family_named(env_cfg.family)
    return family is not None and family.envpool_atari


def atari_game(env_id: str) -> str:
    """Pong for ALE/Pong-v5, PongNoFrameskip-v4, Pong-v4..."""
    name = env_id.split(":")[-1].removeprefix("ALE/")
    return re.sub(r"(NoFrameskip|Deterministic)?-v\d+$", "", name)


def atari_config(env_cfg: EnvConfig, wrappers: dict[str, Any]) -> dict[str, Any]:
    """EnvPool's Atari options for the AtariWrapper and frame stack of an env config."""
    config: dict[str, Any] = {"stack_num": env_cfg.frame_stack or 1}
    family = family_named(env_cfg.family)
    preprocessing = set(family.wrappers.values()) if family is not None else set()  # (Atari's: AtariWrapper)
    for name, spec in wrappers.items():
        if spec.get("_target_") not in preprocessing:
            raise ConfigError(f"env.wrappers.{name}: {UNUSED} (env.vec_env=lean steps any wrapper)")
        for key, value in spec.items():
            if key == "_target_":
                continue
            if key == "screen_size":
                config["img_height"] = config["img_width"] = value
            elif key in ATARI_OPTIONS:
                config[ATARI_OPTIONS[key][0]] = value
            elif not (key == "action_repeat_probability" and value == 0):
                raise ConfigError(f"env.wrappers.{name}.{key}: {UNUSED} (env.vec_env=lean takes it)")
    if not wrappers:
        raise ConfigError("env.vec_env=envpool: EnvPool's Atari always preprocesses as AtariWrapper does; "
                          "env=atari has it (or env.vec_env=lean for raw frames)")  # fmt: skip
    for option, default in ATARI_OPTIONS.values():
        config.setdefault(option, default)
    config["repeat_action_probability"] = _sticky(env_cfg.id)
    return config


def _sticky(env_id: str) -> float:
    """The id's sticky-action probability in gymnasium's registration (v5 and v0 ids 0.25, v4 ones none)."""
    try:
        return float(gym.spec(env_id).kwargs["repeat_action_probability"])
    except (gym.error.Error, KeyError):  # (ale-py not installed: its rule)
        return 0.0 if env_id.endswith("-v4") else 0.25


def envpool_task(env_cfg: EnvConfig, kwargs: dict[str, Any], wrappers: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """EnvPool's task id and options for an env config; a one-line error for what EnvPool has not."""
    envpool = _import_envpool()
    atari = atari_task(env_cfg)
    task = f"{atari_game(env_cfg.id)}-v5" if atari else env_cfg.id
    known = envpool.list_all_envs()
    if task not in known:
        raise ConfigError(
            f"env.vec_env=envpool: EnvPool has no {env_cfg.id} (env.vec_env=auto steps it in this process)"
        )
    fields = envpool.make_spec(task).config._fields
    config = atari_config(env_cfg, wrappers) if atari else {}
    if not atari:
        for name in wrappers:
            raise ConfigError(f"env.wrappers.{name}: {UNUSED}: EnvPool steps its envs in C++, without "
                              f"gymnasium wrappers (env.vec_env=lean takes them)")  # fmt: skip
        if env_cfg.frame_stack:
            config["stack_num"] = env_cfg.frame_stack if "stack_num" in fields else None
    for key, value in kwargs.items():
        if key == "max_episode_steps":  # Atari's counts frames (frameskip=1 under AtariWrapper), EnvPool's steps
            config["max_episode_steps"] = max(1, value // config["frame_skip"]) if atari else value
        elif atari and key == "frameskip" and value == 1:
            continue
        elif key in (ALE_KWARGS if atari else set(fields) - RESERVED):
            config[key] = value
        else:
            raise ConfigError(f"env.kwargs.{key}: {UNUSED} for {task} (env.vec_env=lean takes it)")
    return task, {key: value for key, value in config.items() if value is not None}


class EnvPoolVecEnv(BatchedVecEnv):
    def __init__(
        self,
        task: str,
        options: dict[str, Any],
        n_envs: int,
        seed: int,
        atari: bool,
        monitor_dir: Path | None,
        override_existing: bool = True,
        spaces: tuple[gym.Space, gym.Space] | None = None,
    ) -> None:
        """``spaces``: the gymnasium env's observation and action spaces, which this vector env declares
        (EnvPool's can differ in dtype or bounds: float64 MuJoCo actions, unbounded Box2D observations), so
        that an agent moves between backends; observations are cast to the declared dtype."""
        self.task, self.options, self.atari = task, options, atari
        self.env_seeds = [seed + i for i in range(n_envs)]
        self.pool, own = self._make(n_envs)
        self.fresh = True  # not stepped since it was seeded: a seed() with the same seeds needs no new pool
        self.spec = None
        self.render_mode = None
        observation_space, action_space = spaces or own
        self.obs_dtype = observation_space.dtype if observation_space.dtype != own[0].dtype else None
        self.action_dtype = own[1].dtype if action_space.dtype != own[1].dtype else None
        super().__init__(n_envs, observation_space, action_space)
        self.episodes = EpisodeStats(n_envs, task, monitor_dir, override_existing)
        self.actions = np.zeros(0)
        self.all_ids = np.arange(n_envs, dtype=np.int32)

    def _make(self, n_envs: int) -> tuple[Any, tuple[gym.Space, gym.Space]]:
        """A pool of ``n_envs`` envs seeded ``self.env_seeds``, and its observation and action spaces."""
        envpool = _import_envpool()
        with warnings.catch_warnings(), _without_jax():  # (the warning: its spaces' float64 bounds, cast)
            warnings.filterwarnings("ignore", ".*precision lowered", UserWarning)
            pool = envpool.make(self.task, env_type="gymnasium", num_envs=n_envs, batch_size=n_envs,
                                num_threads=min(n_envs, job_cpus()), seed=self.env_seeds[0],
                                env_seed=self.env_seeds, **self.options)  # fmt: skip
            return pool, (pool.observation_space, pool.action_space)

    def reset(self) -> VecEnvObs:
        seeded = any(seed is not None for seed in self._seeds)
        seeds = [seed if seed is not None else self.env_seeds[i] for i, seed in enumerate(self._seeds)]
        if seeded and (seeds != self.env_seeds or not self.fresh):  # SB3's seed(): EnvPool seeds a pool once
            self.pool.close()
            self.env_seeds = seeds
            self.pool, _ = self._make(self.num_envs)
            self.fresh = True
        self._reset_seeds()
        self._reset_options()
        obs, info = self.pool.reset(self.all_ids)
        self.fresh = False
        self.episodes.restart()
        self.reset_infos = [{} for _ in range(self.num_envs)]
        return self._cast(obs[np.argsort(info["env_id"])])

    def _cast(self, obs: np.ndarray) -> np.ndarray:
        return obs if self.obs_dtype is None else obs.astype(self.obs_dtype)

    def step_async(self, actions: np.ndarray) -> None:
        self.actions = actions if self.action_dtype is None else actions.astype(self.action_dtype)

    def step_wait(self) -> VecEnvStepReturn:
        self.fresh = False
        obs, rewards, terminated, truncated, info = self.pool.step(self.actions, self.all_ids)
        obs = self._cast(obs)
        rewards = rewards.astype(np.float32, copy=False)
        dones = terminated | truncated
        infos: list[dict[str, Any]] = [{"TimeLimit.truncated": bool(truncated[i] and not terminated[i])}
                                       for i in range(self.num_envs)]  # fmt: skip
        if self.atari:  # the game's end and its unclipped score, as Monitor under AtariWrapper sees them
            ends, score = (info["terminated"] > 0) | truncated, info["reward"]
        else:
            ends, score = dones, rewards
        self.episodes.step(score, ends, infos)
        finished = np.flatnonzero(dones).astype(np.int32)
        if finished.size:
            for i in finished:
                infos[i]["terminal_observation"] = obs[i].copy()
            no_op = np.zeros((finished.size, *self.actions.shape[1:]), dtype=self.actions.dtype)
            reset_obs, *_, reset_info = self.pool.step(no_op, finished)  # EnvPool's reset; the action is ignored
            obs[reset_info["env_id"]] = self._cast(reset_obs)
        return obs, rewards, dones, infos

    def close(self) -> None:
        self.episodes.close()
        self.pool.close()

    def _batch(self) -> Any:
        return self.pool
