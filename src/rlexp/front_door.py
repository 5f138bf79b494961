"""The front door: a bad input costs one line naming its key, and leaves nothing behind.

Before a run dir exists, everything the run will build that can fail on a bad value is built once, on one
env in this process, writing no file: the env with its kwargs, wrappers and frame stack, the policy and its
kwargs, device, schedules, action noise, replay buffer, and the trained agent to continue. Ranges that no
typed schema expresses are checked first. The builders themselves (rlexp.run.envs, rlexp.run.model) name
the key of whatever fails, so the run would report the same line.

A single run is checked by the ``FrontDoor`` Hydra callback (``on_run_start``: before Hydra creates the
run dir). A multirun or search gets the checks that need no build on its base config (``on_multirun_start``:
before the sweep dir exists; swept keys are not in it yet), and each of its jobs the whole check, in its
own dir inside the sweep dir.
"""

from __future__ import annotations

import copy
import logging
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path
from typing import Any

from hydra.core.hydra_config import HydraConfig
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf, open_dict, read_write

from rlexp.errors import ConfigError, Refused, one_line_error
from rlexp.run import lock
from rlexp.schema import did_you_mean, reject_unknown_keys

log = logging.getLogger(__name__)

_UNIT = ("in [0, 1]", lambda v: 0.0 <= v <= 1.0)
_POSITIVE = ("> 0", lambda v: v > 0)
_NOT_NEGATIVE = (">= 0", lambda v: v >= 0)
# key -> (what it must be, test); a key the algorithm does not have, or a null where null is allowed, is skipped
RANGES: dict[str, tuple[str, Callable[[float], bool]]] = {
    "n_timesteps": _POSITIVE,
    "torch_threads": (">= 1", lambda v: v >= 1),
    "algo.learning_rate": _POSITIVE,
    "algo.gamma": _UNIT,
    "algo.gae_lambda": _UNIT,
    "algo.tau": _UNIT,
    "algo.exploration_fraction": _UNIT,
    "algo.exploration_initial_eps": _UNIT,
    "algo.exploration_final_eps": _UNIT,
    "algo.batch_size": _POSITIVE,
    "algo.buffer_size": _POSITIVE,
    "algo.n_steps": _POSITIVE,
    "algo.n_epochs": _POSITIVE,
    "algo.learning_starts": _NOT_NEGATIVE,
    "algo.clip_range": _POSITIVE,
    "algo.ent_coef": _NOT_NEGATIVE,
    "algo.vf_coef": _NOT_NEGATIVE,
    "algo.max_grad_norm": _POSITIVE,
    "algo.target_update_interval": _POSITIVE,
    "algo.policy_delay": _POSITIVE,
    "algo.n_delta": _POSITIVE,
    "env.n_envs": _POSITIVE,
    "env.frame_stack": _NOT_NEGATIVE,
    "env.max_episode_steps": _POSITIVE,
    "action_noise.std": _NOT_NEGATIVE,
    "callbacks.eval.freq": (">= 0 (0: no periodic evaluation)", lambda v: v >= 0),
    "callbacks.eval.n_episodes": _POSITIVE,
    "callbacks.eval.n_evaluations": _POSITIVE,
    "callbacks.eval.final_episodes": _POSITIVE,
    "callbacks.eval.n_envs": ("> 0 (null: one per episode, at most 16)", lambda v: v > 0),
    "callbacks.checkpoint.freq": (">= 0 (0: no checkpoints)", lambda v: v >= 0),
    "random_baseline.episodes": (">= 0 (0: no baseline)", lambda v: v >= 0),
    "callbacks.checkpoint.keep_last": _POSITIVE,
    "diagnostics.early": _UNIT,
    "diagnostics.entropy_floor": _UNIT,
    "diagnostics.ent_coef_floor": _UNIT,
    "diagnostics.explained_variance_updates": _POSITIVE,
    "diagnostics.max_approx_kl": _NOT_NEGATIVE,
    "diagnostics.max_clip_fraction": _UNIT,
    "diagnostics.q_factor": _NOT_NEGATIVE,
    "diagnostics.q_every": _POSITIVE,
    "diagnostics.train_eval_gap": _NOT_NEGATIVE,
}


@dataclass
class Checked:
    """What the front door found for a single run: warnings to log and record, and the dirs Hydra is
    about to create for it (removed again should the command fail before the run starts)."""

    warnings: list[str] = field(default_factory=list)
    # the topmost directory of the run dir that did not exist yet
    created: Path | None = None


def _check_ranges(cfg: DictConfig) -> None:
    for key, (rule, ok) in RANGES.items():
        value = OmegaConf.select(cfg, key, default=None)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue  # absent, null, or not a number (SAC's ent_coef: "auto")
        if not ok(value) or (isinstance(value, float) and not math.isfinite(value)):
            raise ConfigError(f"{key}={value}: must be {rule}")
    n_evaluations = cfg.callbacks.eval.n_evaluations
    if n_evaluations is not None and n_evaluations > cfg.n_timesteps:
        raise ConfigError(f"callbacks.eval.n_evaluations={n_evaluations}: must be <= n_timesteps={cfg.n_timesteps}")


def tuned_options() -> list[str]:
    """The tuned files on this command's config search path (hydra.searchpath included); the shipped
    ones outside a Hydra app."""
    if not HydraConfig.initialized():
        return sorted(
            p.name.removesuffix(".yaml") for p in (files("rlexp.conf") / "tuned").iterdir() if p.name.endswith(".yaml")
        )
    names: set[str] = set()
    for source in HydraConfig.get().runtime.config_sources:
        try:
            if source.schema == "file":
                folder: Any = Path(source.path) / "tuned"
            elif source.schema == "pkg":
                folder = files(source.path.replace("/", ".")) / "tuned"
            else:  # structured configs: tuned files are YAML
                continue
            if folder.is_dir():
                names.update(p.name.removesuffix(".yaml") for p in folder.iterdir() if p.name.endswith(".yaml"))
        except (ImportError, OSError):
            continue
    return sorted(names)


def _check_tuned(choices: dict[str, Any], overrides: list[str]) -> None:
    """``tuned=<name>`` given explicitly must exist (the defaults list only skips a missing optional file)."""
    named = [o.split("=", 1)[1] for o in overrides if o.lstrip("+").startswith("tuned=")]
    options = tuned_options()
    if named and named[-1] not in options:
        algo = choices.get("algo")
        same_algo = [t for t in options if t.startswith(f"{algo}_")]
        hint = did_you_mean(named[-1], options) or f" (for {algo}: {', '.join(same_algo) or 'none'})"
        raise ConfigError(f"tuned={named[-1]}: no such tuned file{hint}")


def _check_extra_callbacks(cfg: DictConfig) -> None:
    """User callbacks name an SB3 callback class (they are built once, by the run: they may log or connect)."""
    from hydra.utils import get_class
    from stable_baselines3.common.callbacks import BaseCallback

    for name, spec in cfg.callbacks.extra.items():
        target = spec.get("_target_") if isinstance(spec, DictConfig) else None
        try:
            cls = get_class(target) if target else None
        except Exception as err:
            raise ConfigError(f"callbacks.extra.{name}._target_={target}: {one_line_error(err)}") from None
        if not (isinstance(cls, type) and issubclass(cls, BaseCallback)):
            raise ConfigError(
                f"callbacks.extra.{name}: needs a _target_ naming an SB3 BaseCallback class, got {target}"
            )


def _warnings(cfg: DictConfig) -> list[str]:
    found = []
    starts = OmegaConf.select(cfg, "algo.learning_starts", default=None)
    if isinstance(starts, int) and cfg.trained_agent is None and starts >= cfg.n_timesteps:
        found.append(
            f"algo.learning_starts={starts} >= n_timesteps={cfg.n_timesteps}: the agent only collects "
            "random transitions and never trains"
        )
    if cfg.tuned_file and cfg.tuned_env_id != cfg.env.id:
        found.append(
            f"tuned/{cfg.tuned_file}.yaml was tuned for {cfg.tuned_env_id}, not env.id={cfg.env.id}; "
            "add ~tuned to train with the algorithm's defaults"
        )
    return found


def check_static(cfg: DictConfig, choices: dict[str, Any], overrides: list[str], here: bool = True) -> None:
    """The checks that build nothing: unknown keys, an explicit tuned file, ranges, the device (``here``:
    present on this machine, which is where the run will train)."""
    from rlexp.run.backends import algo_target, check_sbx_device, check_sbx_schedule, is_sbx
    from rlexp.run.model import check_device
    from rlexp.trackers import check_installed

    reject_unknown_keys(cfg)
    check_installed(cfg)
    _check_stop(cfg)
    _check_tuned(choices, overrides)
    _check_ranges(cfg)
    if is_sbx(cfg):  # (what needs sbx's classes is checked where the job runs)
        check_sbx_device(cfg)
        check_sbx_schedule(cfg, algo_target(cfg))
    check_device(cfg.device, here)


def check(cfg: DictConfig, choices: dict[str, Any], overrides: list[str], resuming: bool = False) -> list[str]:
    """Refuses a bad experiment config with a ConfigError naming the key; returns warnings.

    ``resuming``: the run continues in its run dir (Gymnasium's env checker ran when it started)."""
    # torch and SB3 load here, when a run is about to start (not for --help or --cfg)
    from rlexp.run.callbacks import stop_threshold
    from rlexp.run.envs import check_env, probe_env
    from rlexp.run.model import build_model, check_trained_agent

    check_static(cfg, choices, overrides)
    _check_extra_callbacks(cfg)
    stop_threshold(cfg)  # (solved: the env's reward_threshold, which needs its spec)
    if cfg.env.check and not resuming:
        check_env(cfg.env)
    probe = probe_env(cfg.env, cfg.seed)
    try:
        build_model(cfg, probe, probe=True)
        found = check_trained_agent(cfg, probe) if cfg.trained_agent is not None else []
    finally:
        probe.close()
    return found + _warnings(cfg)


def _check_stop(cfg: DictConfig) -> None:
    """callbacks.stop: solved, a reward or null, with periodic evaluations to reach it."""
    from rlexp.run.callbacks import eval_freq, stop_value

    if stop_value(cfg) is not None and eval_freq(cfg) <= 0:
        raise ConfigError(
            "callbacks.stop ends training after a periodic evaluation, and callbacks.eval.freq=0 turns them off; "
            "give callbacks.eval.freq > 0"
        )


def job_config(config: DictConfig) -> DictConfig:
    """The experiment config of a Hydra config (without its ``hydra`` node), as the task receives it."""
    cfg = copy.deepcopy(config)
    with read_write(cfg), open_dict(cfg):
        del cfg["hydra"]
    return cfg


def _first_missing(path: Path) -> Path | None:
    """The topmost directory of ``path`` that does not exist yet."""
    missing = None
    for p in [path, *path.parents]:
        if p.exists():
            break
        missing = p
    return missing


_checked: dict[Path, Checked] = {}


def checked(run_dir: Path) -> Checked | None:
    """What FrontDoor found for the single run in ``run_dir`` (None: not checked yet, e.g. a multirun job)."""
    return _checked.get(run_dir.resolve())


class FrontDoor(Callback):
    """Hydra callback (conf/config.yaml, hydra.callbacks): refuses bad input before Hydra creates a dir."""

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        from rlexp.run.run_dir import check_run_dir, remove_created

        HydraConfig.instance().set_config(config)  # for ${hydra:...} in the job's config
        run_dir = Path(str(config.hydra.run.dir))
        created = _first_missing(run_dir)
        lock_was_there = (run_dir / lock.LOCK_FILE).exists()
        try:
            # one owner: a second rlexp on this dir is refused here, before Hydra writes into it, and the
            # checks below see a dir that no other process changes
            lock.hold(run_dir)
        except Exception as err:
            raise Refused(err) from err
        try:
            cfg = job_config(config)
            found = check_run_dir(cfg, run_dir)  # another run in that dir is refused
            resuming = found is not None and found[1] is not None  # (else: absent, or starts over)
            warnings = check(cfg, dict(config.hydra.runtime.choices), list(config.hydra.overrides.task), resuming)
        except Exception as err:
            lock.release(run_dir)
            if not lock_was_there:  # what this refusal created goes again: the lock, and the dir if new
                (run_dir / lock.LOCK_FILE).unlink(missing_ok=True)
                remove_created(run_dir, created)
            raise Refused(err) from err
        _checked[run_dir.resolve()] = Checked(warnings, created)

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        from hydra.core.override_parser.overrides_parser import OverridesParser

        HydraConfig.instance().set_config(config)
        try:
            parsed = OverridesParser.create().parse_overrides(list(config.hydra.overrides.task))
            fixed = [o.input_line for o in parsed if not o.is_sweep_override()]
            # the jobs may train elsewhere (a GPU node): whether the device is there is theirs to check
            check_static(job_config(config), dict(config.hydra.runtime.choices), fixed, here=False)
        except Exception as err:
            raise Refused(err) from err
