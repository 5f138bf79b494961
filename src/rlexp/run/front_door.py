"""The front door: a bad input costs one line naming its key, and leaves nothing behind.

Before a run dir exists, everything the run will build that can fail on a bad value is built once, on one
env in this process, writing no file: the env with its kwargs, wrappers and frame stack, the policy and its
kwargs, device, schedules, action noise, replay buffer, and the trained agent to continue. Ranges that no
typed schema expresses are checked first (rlexp.config.validation). The builders themselves (rlexp.builders) name
the key of whatever fails, so the run would report the same line.

A single run is checked by the ``FrontDoor`` Hydra callback (``on_run_start``: before Hydra creates the
run dir). A multirun or search gets the checks that need no build on its base config (``on_multirun_start``:
before the sweep dir exists; swept keys are not in it yet), and each of its jobs the whole check, in its
own dir inside the sweep dir.
"""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hydra.core.hydra_config import HydraConfig
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from rlexp.cluster.cpus import cnn_on_envpool, passive_waits
from rlexp.config.env_families import check_family
from rlexp.config.plain import plain_dict
from rlexp.config.schema import ExperimentConfig, as_node
from rlexp.config.tuned import check_tuned
from rlexp.config.validation import (
    check_evaluation_count,
    check_policy_kwargs,
    check_ranges,
    config_warnings,
    job_config,
    reject_unknown_keys,
)
from rlexp.errors import ConfigError, Refused, one_line_error, warning_line
from rlexp.lifecycle import lock
from rlexp.run.mistakes import check_group_keys, check_optional_choices, check_required
from rlexp.rundir.contract import LOCK_FILE, moved_name

log = logging.getLogger(__name__)


@dataclass
class Checked:
    """What the front door found for a single run: warnings to log and record, and the dirs Hydra is
    about to create for it (removed again should the command fail before the run starts)."""

    warnings: list[str] = field(default_factory=list)
    # the topmost directory of the run dir that did not exist yet
    created: Path | None = None


def _check_extra_callbacks(cfg: ExperimentConfig) -> None:
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


def _check_moved_targets(node: Any, where: str = "") -> None:
    """A ``_target_`` in a module that moved (a user's YAML written for an earlier release: ``rlexp.build.*``)
    gets the name it has today, in one line."""
    if isinstance(node, dict):
        target = node.get("_target_")
        if isinstance(target, str) and moved_name(target) != target:
            raise ConfigError(f"{where}_target_={target}: moved; write _target_={moved_name(target)}")
        for key, value in node.items():
            _check_moved_targets(value, f"{where}{key}.")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            _check_moved_targets(value, f"{where}{i}.")


def check_static(cfg: ExperimentConfig, choices: dict[str, Any], overrides: list[str], here: bool = True) -> None:
    """The checks that build nothing: unknown keys, an explicit tuned file, ranges, the device (``here``:
    present on this machine, which is where the run will train)."""
    from rlexp.builders.backends import algo_target, check_sbx_device, check_sbx_schedule, is_sbx
    from rlexp.builders.device import check_device
    from rlexp.trackers import check_installed

    check_required(cfg, overrides)
    _check_moved_targets(OmegaConf.to_container(cfg, resolve=False))
    reject_unknown_keys(as_node(cfg))
    check_group_keys(cfg, overrides)
    check_installed(cfg.logger)
    _check_stop(cfg)
    check_tuned(choices, overrides)  # (before the generic check of optional groups: it says more for tuned=)
    check_optional_choices(overrides)
    check_ranges(as_node(cfg))
    check_evaluation_count(cfg.callbacks.eval, cfg.n_timesteps)
    check_policy_kwargs(cfg.algo)
    if is_sbx(cfg.backend):  # (what needs sbx's classes is checked where the job runs)
        check_sbx_device(cfg.device)
        check_sbx_schedule(cfg.lr_schedule, algo_target(cfg.algo, cfg.backend))
    check_device(cfg.device, here)


def check(cfg: ExperimentConfig, choices: dict[str, Any], overrides: list[str], resuming: bool = False) -> list[str]:
    """Refuses a bad experiment config with a ConfigError naming the key; returns warnings.

    ``resuming``: the run continues in its run dir (Gymnasium's env checker ran when it started)."""
    # torch and SB3 load here, when a run is about to start (not for --help or --cfg)
    from rlexp.builders.envs import check_env, probe_env, spec_threshold
    from rlexp.builders.model import build_model, observation_warnings
    from rlexp.loading.trained_agent import check_trained_agent
    from rlexp.monitor.solved import stop_threshold

    check_static(cfg, choices, overrides)
    check_family(cfg.env.family, cfg.env.id)
    _check_extra_callbacks(cfg)
    stop_threshold(
        cfg.callbacks, cfg.env, lambda: spec_threshold(cfg.env.id)
    )  # (solved: the env's reward_threshold, in its spec)
    if cfg.env.check and not resuming:
        check_env(cfg.env)
    probe = probe_env(cfg.env, cfg.seed)
    try:
        with warnings.catch_warnings(record=True) as caught:  # SB3's about a batch size, say: the run's too
            warnings.simplefilter("always")
            build_model(
                probe, cfg.algo, backend=cfg.backend, torch_threads=cfg.torch_threads, device=cfg.device, seed=cfg.seed,
                lr_schedule=cfg.lr_schedule, clip_range_schedule=cfg.clip_range_schedule,
                action_noise=cfg.action_noise, verbose=cfg.logger.verbose, env_cfg=cfg.env, probe=True,
            )  # fmt: skip
            found = check_trained_agent(
                cfg.trained_agent, probe, algo=cfg.algo, backend=cfg.backend, torch_threads=cfg.torch_threads,
                lr_schedule=cfg.lr_schedule, clip_range_schedule=cfg.clip_range_schedule, env_id=cfg.env.id,
                normalize=cfg.env.normalize,
            ) if cfg.trained_agent is not None else []  # fmt: skip
        found = [*dict.fromkeys(warning_line(w.message, w.category, w.filename) for w in caught), *found]
        found += observation_warnings(cfg.algo, cfg.env.id, probe)
    finally:
        probe.close()
    return found + config_warnings(
        algo=cfg.algo,
        env=cfg.env,
        n_timesteps=cfg.n_timesteps,
        trained_agent=cfg.trained_agent,
        tuned_file=cfg.tuned_file,
        tuned_env_id=cfg.tuned_env_id,
    )


def _check_stop(cfg: ExperimentConfig) -> None:
    """callbacks.stop: solved, a reward or null, with periodic evaluations to reach it."""
    from rlexp.monitor.evaluation import eval_freq
    from rlexp.monitor.solved import stop_value

    if stop_value(cfg.callbacks) is not None and eval_freq(cfg.callbacks.eval, cfg.n_timesteps) <= 0:
        raise ConfigError(
            "callbacks.stop ends training after a periodic evaluation, and callbacks.eval.freq=0 turns them off; "
            "give callbacks.eval.freq > 0"
        )


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


def remove_unstarted() -> None:
    """After Ctrl-C: the new dirs of checked runs that never started go again (they hold Hydra's files and
    the lock only; rlexp.lifecycle.state.remove_created)."""
    if not _checked:  # (nothing to import then: Ctrl-C may have cut an import of torch short)
        return
    from rlexp.lifecycle.state import remove_created

    for run_dir, found in _checked.items():
        remove_created(run_dir, found.created)


class FrontDoor(Callback):
    """Hydra callback (conf/config.yaml, hydra.callbacks): refuses bad input before Hydra creates a dir."""

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        vec_env, policy = (OmegaConf.select(config, key, default="") for key in ("env.vec_env", "algo.policy"))
        if config.torch_threads is None and cnn_on_envpool(vec_env, str(policy)):
            passive_waits()  # before torch loads (below): its threads will take turns with EnvPool's
        from rlexp.lifecycle.state import check_run_dir, remove_created

        HydraConfig.instance().set_config(config)  # for ${hydra:...} in the job's config
        run_dir = Path(str(config.hydra.run.dir))
        created = _first_missing(run_dir)
        lock_was_there = (run_dir / LOCK_FILE).exists()
        try:
            # one owner: a second rlexp on this dir is refused here, before Hydra writes into it, and the
            # checks below see a dir that no other process changes
            lock.hold(run_dir)
        except Exception as err:
            raise Refused(err) from err
        try:
            cfg = job_config(config)
            found = check_run_dir(plain_dict(cfg), run_dir)  # another run in that dir is refused
            resuming = found is not None and found[1] is not None  # (else: absent, or starts over)
            warnings = check(cfg, dict(config.hydra.runtime.choices), list(config.hydra.overrides.task), resuming)
        except BaseException as err:  # (Ctrl-C during the checks included)
            lock.release(run_dir)
            if not lock_was_there:  # what this refusal created goes again: the lock, and the dir if new
                (run_dir / LOCK_FILE).unlink(missing_ok=True)
                remove_created(run_dir, created)
            if not isinstance(err, Exception):
                raise
            raise Refused(err) from err
        _checked[run_dir.resolve()] = Checked(warnings, created)

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        from hydra.core.override_parser.overrides_parser import OverridesParser

        HydraConfig.instance().set_config(config)
        try:
            parsed = OverridesParser.create().parse_overrides(list(config.hydra.overrides.task))
            fixed = [o.input_line for o in parsed if not o.is_sweep_override() and o.input_line is not None]
            # the jobs may train elsewhere (a GPU node): whether the device is there is theirs to check
            check_static(job_config(config), dict(config.hydra.runtime.choices), fixed, here=False)
        except Exception as err:
            raise Refused(err) from err
        global _sweep
        sweep_dir = Path(str(config.hydra.sweep.dir))
        _sweep = (sweep_dir, _first_missing(sweep_dir))


# the sweep dir of the multirun under way in this process, and the topmost dir of it that it creates
_sweep: tuple[Path, Path | None] | None = None
_SWEEP_FILE = "multirun.yaml"  # what Hydra writes in a sweep dir before its first job


def remove_unlaunched_sweep() -> None:
    """A multirun that failed before its first job (a swept value refused: ``-m env.vec_env=dumy,dummy``)
    leaves no sweep dir: it holds only Hydra's multirun.yaml; the parents it created go too, if empty."""
    global _sweep
    if _sweep is None:
        return
    (sweep_dir, created), _sweep = _sweep, None
    if created is None or not sweep_dir.is_dir() or [p.name for p in sweep_dir.iterdir()] != [_SWEEP_FILE]:
        return
    (sweep_dir / _SWEEP_FILE).unlink()
    for empty in [sweep_dir, *sweep_dir.parents]:
        if not empty.resolve().is_relative_to(created.resolve()):
            return
        try:
            empty.rmdir()
        except OSError:  # (another command's dir is there now)
            return
