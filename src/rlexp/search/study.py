"""Optuna storages and studies as rlexp uses them, for the sweeper (one process) and its jobs (many)."""

from __future__ import annotations

import hashlib
import json
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import optuna
from hydra.core.hydra_config import HydraConfig
from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import DictConfig
from optuna.storages import BaseStorage
from optuna.trial import TrialState

from rlexp.cluster.liveness import owner_is_gone, slurm_jobs_over, slurm_restart_count
from rlexp.config.hydra_versions import instantiate
from rlexp.config.plain import plain_dict
from rlexp.errors import ConfigError
from rlexp.lifecycle.lock import is_free
from rlexp.rundir.contract import SEED_DIR_PREFIX
from rlexp.search.optuna_private import set_trial_user_attr, study_storage, trial_numbered
from rlexp.search.space import described
from rlexp.search.storage import open_storage

# how a sweep hands its trial to a job: the study and trial by hydra.job.env_set (per-job values under
# hydra.sweeper are refused by Hydra 1.4), the storage by the sweeper's environment (its URL may hold a password)
ENV_STORAGE, ENV_STUDY, ENV_TRIAL = "RLEXP_OPTUNA_STORAGE", "RLEXP_OPTUNA_STUDY", "RLEXP_OPTUNA_TRIAL_ID"
OWNER_ATTR = "rlexp_owner"
INTERRUPTED_ATTR = "rlexp_interrupted"
OVER_CAP_ATTR = "rlexp_over_cap"
RUN_NUMBER_ATTR = "rlexp_run_of"  # a trial continuing a lost trial's run: the number of that run (seed, dir)
REQUEUED_FROM_ATTR = "requeued_from"  # a trial that runs a lost trial's parameters again: that trial's number
# where a trial's run is (it may be another sweeper's sweep dir when several share a study), and the
# command that re-runs it, both recorded by the sweeper that launched it
RUN_DIR_ATTR = "rlexp_run_dir"
COMMAND_ATTR = "rlexp_command"

SEARCH_ATTR = "rlexp_search"  # what the study searches as typed: each key searched (its distribution) or fixed
# what it searches by the sweep's composed config (SearchConfig.record); studies of earlier releases lack it
SEARCH_CONFIG_ATTR = "rlexp_search_config"
SEARCH_COMMAND_ATTR = "rlexp_search_command"  # the command line that made the study
# overrides that change how a search runs or is watched, not what its trials train: free to change on resume
NOT_THE_SEARCH = ("hydra", "logger", "curves", "torch_threads", "device")
# keys of the composed config that each trial sets: its seed (hydra.sweeper.seed + k), and the space as the
# search_space file writes it (the keys searched are compared by their distributions)
PER_TRIAL = ("seed", "search_space")
_UNSET = "(unset)"


def search_record(space: dict[str, optuna.distributions.BaseDistribution], fixed: list[str]) -> dict[str, str]:
    """The search a study was made for, as the command line wrote it (what earlier releases compared)."""
    record = searched(space)
    for line in fixed:
        key, _, value = line.partition("=")
        if not key.lstrip("+~").startswith(NOT_THE_SEARCH):
            record[key.lstrip("+~")] = value if not key.startswith("~") else "(removed)"
    return dict(sorted(record.items()))


def searched(space: dict[str, optuna.distributions.BaseDistribution]) -> dict[str, str]:
    """Each key searched, as the command line writes its distribution: ``choice(32, 64)``."""
    return {name.lstrip("+"): described(distribution) for name, distribution in space.items()}


def search_changes(recorded: dict[str, str], now: dict[str, str]) -> list[str]:
    """What differs between the search a study was made for and this one, key by key (as typed)."""
    return [
        f"{key}={now.get(key, _UNSET)} now, {recorded.get(key, _UNSET)} in the study"
        for key in sorted(recorded.keys() | now.keys())
        if recorded.get(key) != now.get(key)
    ]


def recorded_overrides(recorded: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    """A study's record as typed (``search_record``, all that earlier releases kept) split into the overrides
    that fixed values, to compose its config again, and the keys it searched with their distributions."""
    parser = OverridesParser.create()
    fixed, space = [], {}
    for key, value in recorded.items():
        if value == "(removed)":
            fixed.append(f"~{key}")
            continue
        try:
            sweep = parser.parse_override(f"{key}={value}").is_sweep_override()
        except Exception:  # (no longer Hydra's grammar: composing it fails, and the words are compared)
            sweep = False
        if sweep:
            space[key] = value
        else:
            fixed.append(f"{key}={value}")
    return fixed, space


@dataclass(frozen=True)
class SearchConfig:
    """What a study searches, by the sweep's composed config (defaults filled): each key as a dotted name,
    with its value, or its distribution when searched; ``hydra.*``, the keys that only change how a search
    runs or is watched (NOT_THE_SEARCH) and those each trial sets (PER_TRIAL) left out. Two commands that
    compose the same are one search, however they were typed (``env=cartpole``, the default, or not).

    ``typed``: the keys its command named (fixed or searched). A key that one side lacks differs only when
    a command named it (or a node above it, ``+algo.policy_kwargs=...``): a key that a release of rlexp
    added or removed since the study was made is no change of the search, a ``+key=`` or ``~key`` is."""

    config: dict[str, Any]
    typed: frozenset[str]

    @classmethod
    def of(cls, config: DictConfig, space: dict[str, str], fixed: list[str]) -> SearchConfig:
        """From the sweep's composed config, the searched keys' distributions (``searched``) and its command's
        fixed overrides. Interpolations stay as written: a key that follows a searched one is no change."""
        tree = plain_dict(config, resolve=False, enum_to_str=True)
        found: dict[str, Any] = {}
        for key, value in _dotted(tree).items():
            group = next((name for name in space if key == name or key.startswith(f"{name}.")), None)
            if group is not None:  # (a searched group's keys: its choices, where they were)
                found.setdefault(group, space[group])
            elif not _under(key, (*NOT_THE_SEARCH, *PER_TRIAL)):
                found[key] = value
        found.update({name: d for name, d in space.items() if name not in found})  # (keys a trial adds: +key)
        typed = {line.split("=", 1)[0].lstrip("+~") for line in fixed} | set(space)
        # as the study holds it (JSON: lists, not tuples), so that the two compare alike
        return cls(json.loads(json.dumps(found)), frozenset(k for k in typed if not _under(k, NOT_THE_SEARCH)))

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> SearchConfig:
        return cls(dict(record["config"]), frozenset(record.get("typed", ())))

    def record(self) -> dict[str, Any]:
        """What the study keeps (SEARCH_CONFIG_ATTR): the config, the keys typed, and a hash of the config."""
        return {"sha256": self.sha256, "config": self.config, "typed": sorted(self.typed)}

    @property
    def sha256(self) -> str:
        return hashlib.sha256(json.dumps(self.config, sort_keys=True).encode()).hexdigest()

    def changes(self, now: SearchConfig) -> list[str]:
        """What differs in ``now`` from the search the study was made for (self), key by key: those a
        command named first (``callbacks.eval.n_episodes=3``), then in the config's order; each with both values,
        ``algo.n_epochs=3 now, choice(1, 4) in the study``."""
        if now.sha256 == self.sha256:
            return []
        typed = self.typed | now.typed
        # (a group's name, algo=ppo, names its option: not each key under it, which a release may add to)
        nodes = tuple(name for name in typed if "." in name)
        found = []  # (whether a command named it, the change): a key typed first, then the config's order
        for key in [*now.config, *(k for k in self.config if k not in now.config)]:
            before, after = self.config.get(key, _UNSET), now.config.get(key, _UNSET)
            named = key in typed or _under(key, nodes)
            if before != after and (named or _UNSET not in (before, after)):
                found.append((not named, f"{key}={_shown(after)} now, {_shown(before)} in the study"))
        return [change for _, change in sorted(found, key=lambda item: item[0])]


def _dotted(tree: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested dicts as dotted keys to leaf values (an empty dict, a list: a leaf)."""
    flat: dict[str, Any] = {}
    for key, value in tree.items():
        if isinstance(value, dict) and value:
            flat.update(_dotted(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def _under(key: str, roots: tuple[str, ...]) -> bool:
    return any(key == root or key.startswith(f"{root}.") for root in roots)


def _shown(value: Any) -> str:
    """A value as an override writes it: text as is, others as JSON (3, 0.99, true, null, [64, 64])."""
    return value if isinstance(value, str) else json.dumps(value)


def owner() -> str:
    """Who runs a trial: host and pid, and the SLURM job (with its requeue count) when inside one."""
    job = os.environ.get("SLURM_JOB_ID")
    return f"{socket.gethostname()}:{os.getpid()}" + (f"@slurm:{job}.{slurm_restart_count()}" if job else "")


def _owner(trial: optuna.trial.FrozenTrial) -> tuple[str, str, str | None, int]:
    """Host, pid, SLURM job and requeue count of who runs a trial (``owner()``, as the trial records it)."""
    process, _, slurm = str(trial.user_attrs.get(OWNER_ATTR, "")).partition("@slurm:")
    host, _, pid = process.partition(":")
    job, _, restart = slurm.partition(".")
    return host, pid, job or None, int(restart) if restart.isdigit() else 0


def reclaim_interrupted_trials(study: optuna.Study) -> int:
    """Trials left RUNNING by a killed sweeper (on this host, or in a SLURM job that is over): marked
    FAIL (interrupted) and queued again. Asked when a sweep starts and before each batch, so that the
    live workers of a shared study take over what a killed one left (one squeue call for all of them).

    A trial whose run still holds its run dir is left to its process even when its SLURM job shows as
    over: a cancelled job's run is saving its checkpoint, and hands the trial over itself (hand_over).
    They do not count towards n_trials, and their parameters run again, so a resumed sweep loses
    and duplicates nothing.
    """
    trials = study.get_trials(deepcopy=False)  # (one read of the study: it may hold thousands of trials)
    running = [t for t in trials if t.state == TrialState.RUNNING]
    mine = os.environ.get("SLURM_JOB_ID")
    jobs_over = slurm_jobs_over({job for t in running if (job := _owner(t)[2]) and job != mine})
    requeued = {t.user_attrs.get(REQUEUED_FROM_ATTR) for t in trials}
    reclaimed = 0
    for trial in running:
        if owner_is_gone(*_owner(trial), jobs_over=jobs_over) and not run_is_held(trial):
            owner_was = trial.user_attrs.get(OWNER_ATTR, "?")
            reason = f"interrupted: its sweeper ({owner_was}) ended while it ran; its parameters run again"
            reclaimed += _requeue(study, trial, reason, trial.number not in requeued)
    return reclaimed


def hand_over(study: optuna.Study, trial: optuna.trial.FrozenTrial, step: int | None) -> bool:
    """A trial whose run this process stopped on a signal, checkpoint saved and run dir let go of (``step``:
    where), or that never started: queued again at once, so that the next worker to ask (or this search run
    again) continues it from there."""
    if run_is_held(trial):
        return False  # (its run goes on in a job of its own: the live workers reclaim it when it ends)
    at = f" at step {step}; its run continues from its checkpoint" if step is not None else "; its parameters run again"
    reason = f"interrupted: stopped by a signal{at} in a trial queued for it"
    return _requeue(study, trial, reason, True)


def run_is_held(trial: optuna.trial.FrozenTrial) -> bool:
    """A live process holds the trial's run dir, or one of its seeds' (rlexp.lifecycle.lock): its run has
    not let go yet."""
    run_dir = trial.user_attrs.get(RUN_DIR_ATTR)
    if not run_dir:
        return False
    dirs = [Path(run_dir), *Path(run_dir).glob(f"{SEED_DIR_PREFIX}*")]
    return any(is_free(d) is False for d in dirs)


def _requeue(study: optuna.Study, trial: optuna.trial.FrozenTrial, reason: str, enqueue: bool) -> bool:
    """Marks a lost trial FAIL (interrupted) and queues its parameters again, unless another process did
    it first (only the one whose tell succeeds queues them)."""
    try:
        set_trial_user_attr(study, trial, INTERRUPTED_ATTR, True)
        set_trial_user_attr(study, trial, "fail_reason", reason)
        study.tell(trial.number, state=TrialState.FAIL)
    except (optuna.exceptions.UpdateFinishedTrialError, RuntimeError, ValueError):
        return False
    if enqueue:
        study.enqueue_trial(trial.params, user_attrs={REQUEUED_FROM_ATTR: trial.number})
    return True


def lost_trial(study: optuna.Study, trial: optuna.Trial) -> optuna.trial.FrozenTrial | None:
    """The lost trial whose parameters ``trial`` runs again, if it is such a trial."""
    number = trial.user_attrs.get(REQUEUED_FROM_ATTR)
    if number is None:
        return None
    return trial_numbered(study, int(number))


def counted_trials(study: optuna.Study) -> list[optuna.trial.FrozenTrial]:
    """Every trial of the study except those interrupted (run again) or given back over max_total_trials."""
    return [
        t
        for t in study.get_trials(deepcopy=False)
        if not t.user_attrs.get(INTERRUPTED_ATTR) and not t.user_attrs.get(OVER_CAP_ATTR)
    ]


def finished_trials(study: optuna.Study) -> list[optuna.trial.FrozenTrial]:
    """Trials that count towards n_trials: completed, pruned or failed on their own."""
    return [t for t in counted_trials(study) if t.state != TrialState.RUNNING and t.state != TrialState.WAITING]


def _sweep_pruner() -> optuna.pruners.BasePruner | None:
    """The sweep's pruner, rebuilt from the job's Hydra config (Optuna does not store pruners)."""
    if not HydraConfig.initialized():
        return None
    node = HydraConfig.get().sweeper.get("pruner")
    return instantiate(node) if node is not None and "_target_" in node else None


# the storages of the sweeps under way in this process, by URL (rlexp.sweeper.loop): a job run in its sweeper's
# process (Hydra's basic launcher) reaches its trial through its sweeper's, and opens none of its own (a SQLite
# engine made and its schema checked, a journal file read again, at every trial)
_sweeping: dict[str, BaseStorage] = {}
os.register_at_fork(after_in_child=_sweeping.clear)  # (a forked child must not use its parent's connections)


@contextmanager
def jobs_reach(url: str, study: optuna.Study) -> Iterator[None]:
    """While a sweep runs: the jobs that it runs in this process reach their trials through the storage of
    its ``study``, the storage at ``url``."""
    _sweeping[url] = study_storage(study)
    try:
        yield
    finally:
        _sweeping.pop(url, None)


def job_trial() -> optuna.trial.Trial | None:
    """In a job of an rlexp sweep: the live trial that this job runs, rebuilt from the shared storage (its
    sweeper's when the job runs in the sweeper's process)."""
    trial_id = os.environ.get(ENV_TRIAL)
    if not trial_id:
        return None
    url = os.environ.get(ENV_STORAGE)
    if not url:  # (e.g. an sbatch told not to pass the environment on: --export=NONE)
        raise ConfigError(
            f"{ENV_TRIAL} is set but {ENV_STORAGE} is not: this trial's job did not get its sweeper's "
            "environment (an sbatch --export other than ALL?)"
        )
    storage = _sweeping.get(url) or open_storage(url)
    study = optuna.load_study(study_name=os.environ[ENV_STUDY], storage=storage, pruner=_sweep_pruner())
    return optuna.trial.Trial(study, int(trial_id))
