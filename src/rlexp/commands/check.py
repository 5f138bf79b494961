"""Check an env before training on it: `rlexp check [--episodes N] [--steps N] <the run's overrides>`.

The config is composed and built exactly as a training run's (the front door: envs, model, schedules,
callbacks, tuned file), with no run dir. Then, on one env as the run holds it (Monitor and wrappers):
Gymnasium's and SB3's env checkers, reset/step seeding determinism, the observations and rewards seen
under random actions (NaN and inf fail), env steps per second alone, and a random-policy baseline on
the eval env, with its 95% confidence interval. Exits 1 when a check fails.
"""

from __future__ import annotations

import argparse
import copy
import re
import sys
import time
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
from omegaconf import DictConfig, OmegaConf

from rlexp.commands.arguments import positive_int
from rlexp.config.schema import ExperimentConfig


def parse_options(args: list[str]) -> tuple[argparse.Namespace, list[str]]:
    """check's own options; everything else goes to Hydra as the run's overrides."""
    from rlexp.commands.arguments import OneLineParser

    parser = OneLineParser(
        prog="rlexp check", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--episodes", type=positive_int, default=20, help="random-policy episodes (default 20)")
    parser.add_argument("--steps", type=positive_int, default=1000, help="random steps for seeding and ranges (1000)")
    return parser.parse_known_intermixed_args(args)


def main(args: list[str]) -> int:
    """`rlexp check <args>`; returns the exit code. The config is composed with Hydra's compose API, as
    ``rlexp.compose`` composes it (no Hydra run: no run dir, no file), from the overrides as the command
    takes them, then checked and built by the front door as a run's. A config that composes or builds
    badly raises the error a run would (rlexp.cli says it in one line, as for training)."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.core.utils import env_override
    from hydra.types import RunMode

    from rlexp.cluster.cpus import cnn_on_envpool, passive_waits
    from rlexp.config.validation import job_config
    from rlexp.run import front_door
    from rlexp.run.hydra_session import command_overrides, hydra_session

    options, overrides = parse_options(args)
    flag = next((arg for arg in overrides if arg.startswith("-")), None)
    if flag is not None:  # -m, --cfg ...: check takes overrides only
        print(
            f"rlexp check: error: {flag} is not an option of check (one config at a time: key=value overrides)",
            file=sys.stderr,
        )
        return 1
    overrides, moved = command_overrides(overrides)
    if moved is not None:
        print(f"rlexp: {moved}", file=sys.stderr)
    # the env checkers run in the report, where they can fail (the front door's would refuse the config)
    overrides.append("env.check=false")
    with hydra_session() as hydra:
        # one config (hparams=search's too); from_shell: Hydra's messages quote as for a command line
        config = hydra.compose_config("config", overrides, run_mode=RunMode.RUN, from_shell=True)
        HydraConfig.instance().set_config(config)  # (hydra.searchpath's tuned files: rlexp.config.tuned)
        from rlexp.config.schema import as_node

        cfg = job_config(config)
        _console_logging(config)
        vec_env, policy = (OmegaConf.select(as_node(cfg), key, default="") for key in ("env.vec_env", "algo.policy"))
        if cfg.torch_threads is None and cnn_on_envpool(vec_env, str(policy)):
            passive_waits()  # before torch loads, as a run's front door does
        found = front_door.check(cfg, dict(config.hydra.runtime.choices), list(config.hydra.overrides.task))
        with env_override(dict(config.hydra.job.env_set)):  # as a run's job has them
            return report(cfg, found, options)


def _console_logging(config: DictConfig) -> None:
    """Log lines on the console as a run's job logging has them (conf/hydra/job_logging), without its log
    file: check writes no file."""
    from hydra.core.utils import configure_log
    from omegaconf import open_dict, read_write

    from rlexp.config.hydra_versions import hydra_objects

    config = copy.deepcopy(config)  # (the log config's interpolations resolve against the whole config)
    spec = config.hydra.job_logging
    if isinstance(spec, DictConfig):
        with read_write(spec), open_dict(spec):
            handlers = spec.get("handlers") or {}
            files = [
                name for name, handler in handlers.items() if isinstance(handler, DictConfig) and "filename" in handler
            ]
            for name in files:
                del handlers[name]
            for logger in [spec.get("root"), *(spec.get("loggers") or {}).values()]:
                if isinstance(logger, DictConfig) and logger.get("handlers"):
                    logger.handlers = [h for h in logger.handlers if h not in files]
    with hydra_objects():
        configure_log(spec, config.hydra.verbose)


@dataclass
class Result:
    name: str
    ok: bool
    text: str


def _caught(check: Any) -> tuple[list[str], BaseException | None]:
    """The warnings a checker gave (one line each) and what it raised."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        try:
            check()
            error = None
        except Exception as err:
            error = err
    plain = (re.sub(r"\x1b\[[0-9;]*m", "", str(w.message)).removeprefix("WARN: ") for w in seen)  # gymnasium's colours
    lines = list(dict.fromkeys(" ".join(text.split()) for text in plain))
    return lines, error


def _checker(name: str, check: Any) -> tuple[Result, list[str]]:
    from rlexp.errors import one_line_error

    notes, error = _caught(check)
    if error is not None:
        return Result(name, False, one_line_error(error)), notes
    count = f"{len(notes)} warning{'s' * (len(notes) > 1)}"
    return Result(name, True, f"passed ({count}, below)" if notes else "passed"), notes


def _steps(env: Any, seed: int, steps: int) -> dict[str, Any]:
    """``steps`` random steps from reset(seed=seed), the actions drawn from a space seeded with ``seed``."""
    from gymnasium.spaces.utils import flatten

    actions = env.action_space
    actions.seed(seed)

    def seen(obs: Any) -> np.ndarray:
        return np.asarray(flatten(env.observation_space, obs), dtype=np.float64)

    started = time.perf_counter()
    # step i: the observation the action was taken in, the reward and whether the episode ended
    obs, _ = env.reset(seed=seed)
    trace: dict[str, Any] = {"obs": [], "rewards": [], "ends": []}
    for _ in range(steps):
        trace["obs"].append(seen(obs))
        obs, reward, terminated, truncated, _ = env.step(actions.sample())
        trace["rewards"].append(float(reward))
        trace["ends"].append(bool(terminated or truncated))
        if terminated or truncated:
            obs, _ = env.reset()
    trace["obs"].append(seen(obs))
    trace["seconds"] = time.perf_counter() - started
    return trace


def _differs(a: dict[str, Any], b: dict[str, Any]) -> int | None:
    for i, (oa, ob) in enumerate(zip(a["obs"], b["obs"], strict=True)):
        same_obs = np.array_equal(oa, ob, equal_nan=True)
        same_step = i == len(a["rewards"]) or (
            np.array_equal(a["rewards"][i], b["rewards"][i], equal_nan=True) and a["ends"][i] == b["ends"][i]
        )
        if not (same_obs and same_step):
            return i
    return None


def _ranges(env: Any, trace: dict[str, Any]) -> list[Result]:
    import gymnasium as gym

    obs = np.stack(trace["obs"])
    rewards = np.asarray(trace["rewards"])
    found = []
    bad_obs = int((~np.isfinite(obs)).any(axis=1).sum())
    text = f"min {np.nanmin(obs):.4g}, max {np.nanmax(obs):.4g} over {obs.shape[1]} dims"
    space = env.observation_space
    if isinstance(space, gym.spaces.Box):
        finite = np.isfinite(obs)
        outside = int(((obs < space.low.reshape(-1)) | (obs > space.high.reshape(-1)))[finite.all(axis=1)].any(1).sum())
        text += f"; {outside} steps outside the declared bounds" if outside else "; within the declared bounds"
    found.append(Result("observations", bad_obs == 0, f"{bad_obs} steps with NaN or inf; " * bool(bad_obs) + text))
    bad_rewards = int((~np.isfinite(rewards)).sum())
    text = f"per step min {np.nanmin(rewards):.4g}, max {np.nanmax(rewards):.4g}, mean {np.nanmean(rewards):.4g}"
    found.append(Result("rewards", bad_rewards == 0, f"{bad_rewards} NaN or inf; " * bool(bad_rewards) + text))
    return found


def report(cfg: ExperimentConfig, checked: list[str], options: argparse.Namespace) -> int:
    """Runs the checks and prints one screen; returns the exit code. ``checked``: the warnings of the
    front door, which composed and built the config."""
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    from rlexp.builders.envs import gymnasium_check, one_env
    from rlexp.errors import one_line_error
    from rlexp.monitor.baseline import EPISODE_CAP, random_baseline

    env_cfg, seed = cfg.env, cfg.seed
    results = [Result("config", True, "composed and built as a run would build it")]
    notes = [f"config: {w}" for w in checked]
    result, found = _checker("gymnasium", lambda: gymnasium_check(env_cfg))
    results.append(result)
    notes += [f"gymnasium: {n}" for n in found]
    env, twin = one_env(env_cfg, for_eval=False), one_env(env_cfg, for_eval=False)
    try:
        result, found = _checker("sb3", lambda: sb3_check_env(env, warn=True, skip_render_check=True))
        results.append(result)
        notes += [f"sb3: {n}" for n in found]
        first, second = _steps(env, seed, options.steps), _steps(twin, seed, options.steps)
        differs = _differs(first, second)
        results.append(
            Result(
                "seeding",
                differs is None,
                f"reset(seed={seed}) and the same actions give the same {options.steps} steps twice"
                if differs is None
                else f"two envs reset with seed={seed} and given the same actions differ at step {differs}",
            )
        )
        results += _ranges(env, first)
        speed = f"{options.steps / first['seconds']:,.0f} env steps/s (one env, random actions)"
        results.append(Result("speed", True, speed))
    except Exception as err:  # the env itself fails under random actions
        results.append(Result("random steps", False, one_line_error(err)))
    finally:
        env.close()
        twin.close()
    try:
        eval_env = one_env(env_cfg, for_eval=True)
        try:
            baseline = random_baseline(eval_env, seed, options.episodes)
        finally:
            eval_env.close()
    except Exception as err:
        results.append(Result("random policy", False, one_line_error(err)))
    else:
        assert baseline is not None  # (only a stop cuts it)
        if "mean" in baseline:
            ci = baseline["ci95_mean"]
            text = f"return {baseline['mean']:.2f}" + (f" 95% CI [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")
            text += f", IQM {baseline['iqm']:.2f}, over {baseline['episodes']} episodes of the eval env"
        else:
            text = "no episode ended"
        if baseline["endless"]:
            text += f"; {baseline['endless']} did not end within {EPISODE_CAP} steps (set env.max_episode_steps)"
        results.append(Result("random policy", not baseline["endless"] and "mean" in baseline, text))
    _print(cfg, results, notes)
    return 0 if all(r.ok for r in results) else 1


def _print(cfg: ExperimentConfig, results: list[Result], notes: list[str]) -> None:
    tuned = f" (tuned/{cfg.tuned_file}.yaml)" if cfg.tuned_file else ""
    from rlexp.builders.backends import algo_target, is_sbx

    name = algo_target(cfg.algo, cfg.backend).rsplit(".", 1)[-1] + (" (sbx)" if is_sbx(cfg.backend) else "")
    print(f"rlexp check: {name} on {cfg.env.id}{tuned}, seed {cfg.seed}")
    for r in results:
        print(f"  {'ok  ' if r.ok else 'FAIL'} {r.name:<13} {r.text}")
    for note in notes:
        print(f"  note {note[:300]}")
    failed = [r.name for r in results if not r.ok]
    print(f"rlexp check: {len(failed)} failed: {', '.join(failed)}" if failed else "rlexp check: all checks passed")
