"""Builds the training and evaluation vector envs from the `env` config group, and the one-env probe the
front door builds them with."""

from __future__ import annotations

import functools
import importlib
import os
import re
import signal
from collections.abc import Iterable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any, Callable, TypeVar

import gymnasium as gym
from gymnasium.envs.registration import EnvSpec
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.preprocessing import is_image_space, is_image_space_channels_first
from stable_baselines3.common.vec_env import (
    DummyVecEnv,
    SubprocVecEnv,
    VecEnv,
    VecEnvWrapper,
    VecFrameStack,
    VecNormalize,
    VecTransposeImage,
)

from rlexp.config.env_families import missing_extra, register_family
from rlexp.config.hydra_versions import instantiate
from rlexp.config.plain import plain_dict
from rlexp.config.schema import EnvConfig, EvalConfig
from rlexp.errors import ConfigError, one_line_error
from rlexp.monitor.evaluation import EVAL_SEED_OFFSET, eval_env_count
from rlexp.monitor.finite import FiniteEnv
from rlexp.rundir.contract import EVAL_EPISODES, TRAIN_EPISODES
from rlexp.rundir.pickles import load_vecnormalize
from rlexp.vecenvs.choice import envpool_options, resolved
from rlexp.vecenvs.lean import LeanVecEnv

AnyEnv = TypeVar("AnyEnv", VecEnv, gym.Env)  # what closed_at_end closes: a vector env or one env
VEC_ENV_CLASSES = {"dummy": DummyVecEnv, "subproc": SubprocVecEnv, "lean": LeanVecEnv}


def resolve_spec(env_id: str) -> EnvSpec:
    """The Gymnasium spec for a registered id, ``module:Id`` or ``module:EnvClass``.

    Fails with Gymnasium's own "did you mean" suggestion for a misspelt id.
    """
    if ":" not in env_id:
        register_family(env_id)  # ale-py's, minigrid's... ids, registered when used
        try:
            return gym.spec(env_id)
        except gym.error.Error as err:
            raise ConfigError(f"env.id={env_id!r}: {err}") from None
    module_name, name = env_id.split(":", 1)
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise ConfigError(f"env.id={env_id!r}: cannot import module {module_name!r} ({err})") from None
    if name in gym.registry:
        return gym.spec(name)
    attr = getattr(module, name, None)
    if isinstance(attr, type) and issubclass(attr, gym.Env):
        return EnvSpec(id=name, entry_point=env_id)
    try:
        gym.spec(name)
    except gym.error.Error as err:
        raise ConfigError(f"env.id={env_id!r}: {err}") from None
    raise AssertionError("unreachable")  # pragma: no cover


def _apply_wrappers(env: gym.Env, wrappers: dict[str, dict[str, Any]]) -> gym.Env:
    for name, spec in wrappers.items():  # (the front door built each once: a failure here is rare)
        try:
            env = instantiate(spec, env)
        except Exception as err:
            raise ConfigError(f"env.wrappers.{name}: {one_line_error(err)}") from None
    return env


def env_kwargs(env_cfg: EnvConfig, for_eval: bool) -> dict[str, Any]:
    kwargs = plain_dict(env_cfg.kwargs)
    if for_eval:
        kwargs.update(plain_dict(env_cfg.eval_kwargs))
    if env_cfg.max_episode_steps is not None:
        kwargs["max_episode_steps"] = env_cfg.max_episode_steps
    return kwargs


class _IgnoringStopSignals:
    """Env constructor for SubprocVecEnv workers. Ctrl-C and SLURM's signals reach every process of the
    job; the workers ignore them so that the main process can finish its rollout and save a checkpoint
    (rlexp.lifecycle.preemption), then close them."""

    def __init__(self, make: Callable[..., gym.Env]) -> None:
        self.make = make
        self.main_pid = os.getpid()

    def __call__(self, **kwargs: Any) -> gym.Env:
        if os.getpid() != self.main_pid:
            for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGUSR1, signal.SIGUSR2):
                signal.signal(sig, signal.SIG_IGN)
        return self.make(**kwargs)


def make_env_fn(env_cfg: EnvConfig, for_eval: bool = False, render_mode: str | None = None) -> Callable[[], gym.Env]:
    """A picklable zero-argument constructor of one raw env (before Monitor and wrappers)."""
    spec = resolve_spec(env_cfg.id)
    kwargs = env_kwargs(env_cfg, for_eval)
    if render_mode is not None:
        kwargs["render_mode"] = render_mode
    return functools.partial(gym.make, spec, **kwargs)


def _made(env_cfg: EnvConfig, for_eval: bool) -> gym.Env:
    """One raw env; a failure names the kwarg (or the id) that caused it."""
    kwargs = env_kwargs(env_cfg, for_eval)
    try:
        return make_env_fn(env_cfg, for_eval)()
    except ConfigError:
        raise
    except Exception as err:
        missing = missing_extra(env_cfg.id, err)
        if missing is not None:
            raise ConfigError(missing) from None
        found = re.search(r"unexpected keyword argument '(\w+)'", str(err))
        if found and found.group(1) == "max_episode_steps":
            key = "env.max_episode_steps"
        elif found:
            in_eval = for_eval and found.group(1) in env_cfg.eval_kwargs
            key = f"env.{'eval_kwargs' if in_eval else 'kwargs'}.{found.group(1)}"
        else:
            key = "env.kwargs" if kwargs else "env.id"
        raise ConfigError(
            f"{key}: {env_cfg.id} cannot be made with {kwargs or 'no kwargs'} ({one_line_error(err)})"
        ) from None


def one_env(env_cfg: EnvConfig, for_eval: bool) -> gym.Env:
    """One env as each of the run's vector envs holds it: Monitor, then the wrappers (no file written);
    each failure named by its config key."""
    env: gym.Env = Monitor(_made(env_cfg, for_eval))
    for name, spec in plain_dict(env_cfg.wrappers).items():
        try:
            env = instantiate(spec, env)
        except Exception as err:
            env.close()
            raise ConfigError(f"env.wrappers.{name}: {one_line_error(err)}") from None
    return env


def probe_env(env_cfg: EnvConfig, seed: int) -> VecEnv:
    """One env built in this process as the run will build its envs (kwargs, Monitor, wrappers, a reset,
    normalization, frame stack), each failure named by its config key; writes no file. For the front door."""
    if env_cfg.eval_kwargs:
        _made(env_cfg, for_eval=True).close()
    if resolved(env_cfg) == "envpool":  # (Atari: its own frame stack)
        envpool_options(env_cfg, env_kwargs(env_cfg, for_eval=True))
        _made(env_cfg, for_eval=False).close()  # the gymnasium env too: its spaces, the random baseline
        return _Widened(build_vec_env(env_cfg, seed, None, n_envs=1), env_cfg.n_envs)
    env = one_env(env_cfg, for_eval=False)
    try:
        env.reset(seed=seed)
    except Exception as err:
        env.close()
        raise ConfigError(f"env.id={env_cfg.id}: reset() fails ({one_line_error(err)})") from None
    return _Widened(_vec_layers(DummyVecEnv([lambda: env]), env_cfg, None, for_eval=False), env_cfg.n_envs)


class _Widened(VecEnvWrapper):
    """One env that reports ``n_envs`` envs, so that a model built on it for the front door checks
    n_envs-dependent settings (n_steps * n_envs, batch sizes) as the run's model will. Never stepped."""

    def __init__(self, venv: VecEnv, n_envs: int) -> None:
        super().__init__(venv)
        self.num_envs = n_envs

    def reset(self) -> Any:
        return self.venv.reset()

    def step_wait(self) -> Any:
        return self.venv.step_wait()

    def get_attr(self, attr_name: str, indices: Any = None) -> list[Any]:
        return self.venv.get_attr(attr_name) * self.num_envs

    def env_method(self, method_name: str, *args: Any, indices: Any = None, **kwargs: Any) -> list[Any]:
        return self.venv.env_method(method_name, *args, **kwargs) * self.num_envs

    def env_is_wrapped(self, wrapper_class: type, indices: Any = None) -> list[bool]:
        return self.venv.env_is_wrapped(wrapper_class) * self.num_envs


def gymnasium_check(env_cfg: EnvConfig) -> None:
    """Gymnasium's env checker on the raw env (it asks for the env itself, not its wrappers)."""
    from gymnasium.utils.env_checker import check_env as gym_check_env

    env = make_env_fn(env_cfg)()
    try:
        gym_check_env(env.unwrapped, skip_render_check=True)
    finally:
        env.close()


def check_env(env_cfg: EnvConfig) -> None:
    """Gymnasium's env checker (env.check), a failure in one line."""
    try:
        gymnasium_check(env_cfg)
    except AssertionError as err:
        raise ConfigError(f"env.check: {env_cfg.id} fails Gymnasium's env checker: {err}") from None


def build_vec_env(
    env_cfg: EnvConfig,
    seed: int,
    monitor_dir: Path | None,
    normalize_stats: Path | None = None,
    for_eval: bool = False,
    append: bool = False,
    n_envs: int | None = None,
    render_mode: str | None = None,
    check_finite: bool = False,
    in_process: bool = False,
    trust: Iterable[str] = (),
) -> VecEnv:
    """Train env (``for_eval=False``) or eval env with Monitor, wrappers, VecNormalize, frame stack.

    ``monitor_dir`` None: Monitor writes no file (commands that read a run). ``append``: the monitor files
    of a resumed run grow instead of starting over (when each env has one: a file without SB3's header line
    would be unreadable). ``n_envs``: default env.n_envs, 1 for eval. ``env.vec_env`` picks the vector env
    (rlexp.vecenvs.choice); eval envs run in this process (subproc's are lean: the same results).
    ``check_finite``: NaN or inf in observations, rewards or actions raises Diverged (diagnostics.finite).
    ``in_process``: gymnasium envs as SB3 wraps them (lean or dummy), whatever env.vec_env says (an export
    describes the env by its wrappers and frame stack). ``normalize_stats`` is unpickled with rlexp's
    allow-list and the packages in ``trust`` only (rlexp.rundir.pickles).

    The eval env uses but never updates the normalization statistics: they are synced from the
    train env before each evaluation (SB3's EvalCallback and ``sync_envs_normalization``).
    """
    wrappers = plain_dict(env_cfg.wrappers)  # (name -> spec)
    n_envs = n_envs or (1 if for_eval else env_cfg.n_envs)
    if monitor_dir is not None:
        monitor_dir.mkdir(parents=True, exist_ok=True)
        append = append and all((monitor_dir / f"{rank}.{Monitor.EXT}").is_file() for rank in range(n_envs))
    kind = resolved(env_cfg, for_eval, render=render_mode is not None or in_process, n_envs=n_envs)
    env_seed = seed + EVAL_SEED_OFFSET if for_eval else seed
    stacked = False
    if kind in ("numpy", "envpool"):
        venv, stacked = _vectorized(kind, env_cfg, n_envs, env_seed, monitor_dir, append, for_eval)
    else:
        make = make_env_fn(env_cfg, for_eval, render_mode)
        subproc = kind == "subproc"
        venv = make_vec_env(
            _IgnoringStopSignals(make) if subproc else make,
            n_envs=n_envs,
            seed=env_seed,
            monitor_dir=None if monitor_dir is None else str(monitor_dir),
            monitor_kwargs={"override_existing": not append},
            wrapper_class=functools.partial(_apply_wrappers, wrappers=wrappers) if wrappers else None,
            vec_env_cls=VEC_ENV_CLASSES[kind],
        )
    if check_finite and not isinstance(venv.action_space, gym.spaces.Dict):  # (SB3's check takes no Dict actions)
        venv = FiniteEnv(venv)  # under the normalization: the env's own values
    return _vec_layers(venv, env_cfg, normalize_stats, for_eval, stacked, trust)


def _vectorized(
    kind: str, env_cfg: EnvConfig, n_envs: int, seed: int, monitor_dir: Path | None, append: bool, for_eval: bool
) -> tuple[VecEnv, bool]:
    """A vector env that steps all its envs at once (rlexp.vecenvs), and whether it stacks frames itself."""
    kwargs = env_kwargs(env_cfg, for_eval)
    if kind == "numpy":
        from rlexp.vecenvs.numpy_cartpole import NumpyCartPoleVecEnv

        steps = kwargs.pop("max_episode_steps", None)
        venv: VecEnv = NumpyCartPoleVecEnv(env_cfg.id, n_envs, kwargs, steps, monitor_dir, not append)
        venv.seed(seed)
        return venv, False
    from rlexp.vecenvs.envpool_env import EnvPoolVecEnv, atari_task

    task, options = envpool_options(env_cfg, kwargs)
    atari = atari_task(env_cfg)
    spaces = None
    if not atari:  # gymnasium's spaces (Atari's: EnvPool's stack is AtariWrapper's, frame-stacked, channels-first)
        env = make_env_fn(env_cfg, for_eval)()
        spaces = env.observation_space, env.action_space
        env.close()
    venv = EnvPoolVecEnv(task, options, n_envs, seed, atari, monitor_dir, not append, spaces)
    return venv, "stack_num" in options


def build_eval_env(
    env_cfg: EnvConfig,
    episodes: int,
    monitor_dir: Path | None,
    append: bool = False,
    *,
    seed: int,
    eval_cfg: EvalConfig,
    check_finite: bool,
) -> VecEnv:
    """The eval envs of a run's evaluation of ``episodes`` episodes, env i seeded ``seed + 10000 + i``, as many
    as ``eval_cfg`` (callbacks.eval) steps side by side; ``check_finite``: diagnostics.finite."""
    return build_vec_env(
        env_cfg,
        seed,
        monitor_dir,
        for_eval=True,
        append=append,
        n_envs=eval_env_count(eval_cfg, episodes),
        check_finite=check_finite,
    )


@contextmanager
def run_envs(
    env_cfg: EnvConfig,
    monitor_dir: Path,
    normalize_stats: Path | None,
    continued: bool,
    *,
    seed: int,
    eval_cfg: EvalConfig,
    check_finite: bool,
    n_timesteps: int,
) -> Iterator[tuple[VecEnv, VecEnv | None]]:
    """A run's train envs and its periodic evaluations' envs (None without periodic evaluations of
    ``eval_cfg`` over ``n_timesteps``), their episodes logged under ``monitor_dir`` (``continued``: the files
    of a resumed run grow). Closed whatever happens: that also stops SubprocVecEnv workers, which ignore the
    stop signals."""
    from rlexp.monitor.evaluation import eval_freq

    with ExitStack() as envs:
        train_env = build_vec_env(
            env_cfg, seed, monitor_dir / TRAIN_EPISODES, normalize_stats, append=continued, check_finite=check_finite
        )
        envs.enter_context(closed_at_end(train_env))
        eval_env = None
        if eval_freq(eval_cfg, n_timesteps) > 0:  # (the final evaluation builds its own)
            eval_env = build_eval_env(
                env_cfg, eval_cfg.n_episodes, monitor_dir / EVAL_EPISODES, continued,
                seed=seed, eval_cfg=eval_cfg, check_finite=check_finite,
            )  # fmt: skip
            envs.enter_context(closed_at_end(eval_env))
        yield train_env, eval_env


def spec_threshold(env_id: str) -> float | None:
    """The reward_threshold of the env's Gymnasium spec (what callbacks.stop=solved reaches)."""
    return resolve_spec(env_id).reward_threshold


def _vec_layers(
    venv: VecEnv,
    env_cfg: EnvConfig,
    normalize_stats: Path | None,
    for_eval: bool,
    stacked: bool = False,
    trust: Iterable[str] = (),
) -> VecEnv:
    """Normalization, frame stack (unless the vector env stacks its frames) and channels-first images on top
    of the vector env."""
    if env_cfg.normalize:
        if normalize_stats is not None:
            normalized = load_vecnormalize(normalize_stats, venv, trust)
        else:
            try:
                normalized = VecNormalize(venv, **plain_dict(env_cfg.normalize_kwargs))
            except TypeError as err:
                raise ConfigError(f"env.normalize_kwargs: {one_line_error(err)}") from None
        if for_eval:
            normalized.training = False
            normalized.norm_reward = False
        venv = normalized
    if env_cfg.frame_stack and not stacked:
        venv = VecFrameStack(venv, n_stack=env_cfg.frame_stack)
    if is_image_space(venv.observation_space) and not is_image_space_channels_first(
        venv.observation_space  # type: ignore[arg-type]  # (is_image_space found a Box)
    ):
        venv = VecTransposeImage(venv)
    return venv


@contextmanager
def closed_at_end(venv: AnyEnv) -> Iterator[AnyEnv]:
    """Closes the env whatever happens. SubprocVecEnv workers ignore the stop signals, so a worker that
    cannot be closed (its pipe broke) is killed rather than left behind."""
    try:
        yield venv
    finally:
        try:
            venv.close()
        except (OSError, EOFError):  # BrokenPipeError and the like: the error that ended the run matters
            for process in getattr(venv.unwrapped, "processes", []):
                process.kill()
