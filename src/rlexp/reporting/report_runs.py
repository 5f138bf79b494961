"""The runs a report is made of: found by their summary.json under the paths given, read from the run-dir
contract (summary.json, config.yaml, evaluations.npz), grouped into the conditions being compared. RL Zoo's
log folders count as runs too (rlexp.zoo.log_folders: scored by their last periodic evaluation).

Only what a completed run wrote is used; every other run is kept with the reason it is left out, so that
the report lists it instead of dropping it silently."""

from __future__ import annotations

import os
import re
import sys
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache, cached_property, lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from rlexp.config.algorithms import algo_defaults
from rlexp.config.plain import plain_dict
from rlexp.errors import ConfigError, collapsed
from rlexp.rundir.contract import (
    COMMAND_FILE,
    COMPLETED,
    CONFIG_FILE,
    EVALUATIONS_FILE,
    INTERRUPTED,
    RUNNING,
    SUMMARY_FILE,
    read_config_dict,
    read_evaluations,
)
from rlexp.rundir.record import RunRecord, read_record
from rlexp.zoo.log_folders import ARGS_FILE as ZOO_ARGS_FILE
from rlexp.zoo.log_folders import zoo_config, zoo_summary
from rlexp.zoo.path_kinds import PathKind, what_is

# keys that do not change what a run learns or how it is scored: runs differing only there are seeds of
# one condition (the seed itself, logging, drawing, health checks, checkpoints, where it ran)
NOT_GROUPED = (
    "seed",
    "logger",
    "curves",
    "diagnostics",
    "random_baseline",
    "callbacks.checkpoint",
    "callbacks.progress_bar",
    "callbacks.eval.n_envs",
    "device",
    "torch_threads",
    "search_space",
    "env.reward_threshold",  # (what callbacks.stop=solved reaches; callbacks.stop itself splits groups)
    "env.aliases",  # (the ids a preset answers to, not what it builds: a release may add one)
    "env.replaces",
)
# keys added to the config since runs were first written, with the value that a run written before held
# (its config.yaml lacks them): an older run and a newer one of the same condition are one group
ADDED_KEYS = {"backend": "sb3", "callbacks.stop.reward_threshold": None}


def runs_in(path: Path) -> list[Path]:
    """The run dirs ``path`` is or holds (dirs with a summary.json), in order of their names' numbers."""
    if not path.is_dir():
        raise ConfigError(f"{path}: no such directory")
    what = what_is(path)
    if what.started or what.kind is PathKind.ZOO:  # (a run that never started is no run of a report's)
        return [path]
    started, zoo_runs = _walk(path)
    found = sorted(
        [*started, *(d for d in zoo_runs if what_is(d).kind is PathKind.ZOO)],
        key=lambda p: [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", str(p))],  # job 2 before 10
    )
    if not found:
        raise ConfigError(f"{path}: holds no run (no summary.json in it or under it)")
    return found


def _walk(path: Path) -> tuple[list[Path], set[Path]]:
    """The dirs under ``path`` holding a summary.json, and the RL Zoo log folders there (logs/<algo>/<EnvId>_<n>/,
    two above an args.yml), in one walk that never enters a hidden dir (a run set aside, .hydra) nor follows
    a link to a dir (outputs/.../latest: its run is read where it lies)."""
    started: list[Path] = []
    zoo_runs: set[Path] = set()
    for where, dirs, files in os.walk(path):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        if SUMMARY_FILE in files:
            started.append(Path(where))
        if ZOO_ARGS_FILE in files and where != str(path):
            zoo_runs.add(Path(where).parent)
    return started, zoo_runs


def flatten(config: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Dotted keys to leaf values (lists as tuples, so that values can be compared and hashed)."""
    flat: dict[str, Any] = {}
    for key, value in config.items():
        where = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            flat.update(flatten(value, f"{where}."))
        else:
            flat[where] = tuple(value) if isinstance(value, list) else value
    return flat


@cache
def _algo_defaults(target: str) -> dict[str, Any]:
    """The schema's defaults of the algorithm ``target`` names: an older run's config.yaml lacks the algo keys
    added since, which it held at their defaults (as rlexp.rundir.contract.read_config fills them)."""
    return algo_defaults(target) or {}


def _grouped(key: str) -> bool:
    return not any(key == k or key.startswith(f"{k}.") for k in NOT_GROUPED)


@lru_cache(maxsize=64)
def _positions(keys: tuple[str, ...]) -> dict[str, int]:
    return {key: i for i, key in enumerate(keys)}


class FlatConfig(Mapping[str, Any]):
    """A run's config as dotted keys to leaf values, read-only: its values in one tuple beside the positions
    of its keys, which the runs of the same keys share (a sweep's 10,000 runs hold their ~200 keys once, and
    each text value once)."""

    __slots__ = ("_positions", "_values")

    def __init__(self, flat: dict[str, Any]) -> None:
        self._positions = _positions(tuple(flat))
        self._values = tuple(sys.intern(v) if type(v) is str else v for v in flat.values())

    def __getitem__(self, key: str) -> Any:
        return self._values[self._positions[key]]

    def get(self, key: str, default: Any = None) -> Any:
        i = self._positions.get(key)
        return default if i is None else self._values[i]

    def __iter__(self) -> Iterator[str]:
        return iter(self._positions)

    def __len__(self) -> int:
        return len(self._values)


def flat_config(config: dict[str, Any]) -> FlatConfig:
    """The config as dotted keys, for grouping, the differing keys and runs.csv: an older run's config at the
    keys added since as a run written then held them (the algorithm's at the schema's defaults, ADDED_KEYS)."""
    algo = config.get("algo")
    target = algo.get("_target_") if isinstance(algo, dict) else None
    defaults = _algo_defaults(target) if isinstance(target, str) else {}
    missing = {key: value for key, value in defaults.items() if isinstance(algo, dict) and key not in algo}
    return FlatConfig({**ADDED_KEYS, **flatten({"algo": missing} if missing else {}), **flatten(config)})


@dataclass
class ReportRun:
    """One run dir as the report sees it; ``left_out`` says why it is not used (None: used). Its config is
    kept flat (flat_config) and its evaluations as their means: what a report reads of it."""

    dir: Path
    record: RunRecord  # (status "unreadable": its summary.json or config.yaml could not be read)
    flat: FlatConfig
    left_out: str | None = None
    group: str = ""
    score: float | None = None
    eval_steps: np.ndarray = field(default_factory=lambda: np.empty(0))
    eval_means: np.ndarray = field(default_factory=lambda: np.empty(0))

    @property
    def env(self) -> str:
        return str(self.record.env_id or self.flat.get("env.id") or "?")

    @property
    def algo(self) -> str:
        return str(self.record.algo or "?")

    @property
    def seed(self) -> Any:
        return self.flat.get("seed") if self.record.seed is None else self.record.seed

    @cached_property
    def status(self) -> str:
        """summary.json's status, ``died`` for a run it says is running whose process is gone."""
        from rlexp.lifecycle.state import status_now

        return status_now(self.record, self.dir)


def _status_problem(record: RunRecord, run_dir: Path) -> str | None:
    from rlexp.lifecycle.lock import abandoned

    status = record.status
    if status == COMPLETED:
        if record.final_score is None:
            return f"completed without a final evaluation mean in {SUMMARY_FILE}"
        return None
    if status == RUNNING:
        return "its process died before it finished" if abandoned(record, run_dir) else "still running"
    if status == INTERRUPTED:
        return (
            f"interrupted (resumable: its {COMMAND_FILE} finishes it; a search's trial also continues when "
            "its search runs again)"
        )
    if not status:
        return "no status in summary.json"
    error = f": {collapsed(str(record.error))}" if isinstance(record.error, str) and record.error else ""
    return f"{status}{error}"


def damaged(left_out: str | None) -> bool:
    """Left out because its files cannot be read (not because it did not complete): named one by one."""
    return left_out is not None and left_out.startswith(("unreadable ", f"{EVALUATIONS_FILE} unreadable"))


def read_run(run_dir: Path) -> ReportRun:
    """A run dir with what the report needs; an unreadable or unfinished one comes back left out."""
    try:
        zoo = what_is(run_dir).zoo
        if zoo is not None:  # an RL Zoo log folder, read as a run (rlexp.zoo.log_folders)
            record, config = zoo_summary(zoo), plain_dict(zoo_config(zoo), resolve=False, enum_to_str=True)
        else:
            record, config = read_record(run_dir), read_config_dict(run_dir)
        if record is None:
            raise FileNotFoundError(run_dir / SUMMARY_FILE)
    except (OSError, ValueError, ConfigError, yaml.YAMLError) as err:
        kind = "unreadable" if isinstance(err, ConfigError) else type(err).__name__
        return ReportRun(
            run_dir,
            RunRecord(status="unreadable"),
            flat_config({}),
            left_out=f"unreadable {SUMMARY_FILE} or {CONFIG_FILE} ({kind})",
        )
    run = ReportRun(run_dir, record, flat_config(config), left_out=_status_problem(record, run_dir))
    if run.left_out is None:
        try:
            evaluations = read_evaluations(run_dir)
        except Exception as err:  # np.load: EOFError, BadZipFile, zlib.error, KeyError, ValueError...
            run.left_out = f"{EVALUATIONS_FILE} unreadable ({type(err).__name__})"
        else:
            if evaluations is not None:
                run.eval_steps = np.asarray(evaluations.timesteps, dtype=np.float64)
                run.eval_means = evaluations.means
    return run


def _value(run: ReportRun, flat: FlatConfig, key: str) -> str:
    if key == "algo":
        return run.algo
    if key in flat:
        return str(flat[key])
    inner = {k[len(key) + 1 :]: v for k, v in flat.items() if k.startswith(f"{key}.")}
    return str(inner) if inner else "-"


LONG_NAME = 80  # characters of a group's name past which it names only where its runs depart from the usual


def assign_groups(runs: list[ReportRun], keys: list[str] | None = None) -> None:
    """Names each used run's group. Given ``keys``: their values (``algo`` is the algorithm's config
    choice). By default, the composed config minus the seed and NOT_GROUPED: runs of one env whose
    configs differ anywhere else are different groups, named by the algorithm when algorithms differ
    and by the config keys that differ between runs of one env and algorithm. Values that only differ
    between envs (tuned hyperparameters) do not split a group: the env is a task of its own. Where such
    names grow long, each names only the keys where its runs depart from the value most runs have (the
    usual config's group is then named by the algorithm alone)."""
    used = [r for r in runs if r.left_out is None]
    flats = [r.flat for r in used]
    if keys is not None:
        known = set().union(*(f.keys() for f in flats)) | {"algo"}
        for key in keys:
            if key in ("env", "env.id"):
                raise ConfigError(f"--group-by {key}: the env is always a task of its own, never a group")
            if key == "seed":
                raise ConfigError("--group-by seed: the seeds are what a group's runs differ by, never a group")
            if key not in known and not any(k.startswith(f"{key}.") for k in known):
                from rlexp.config.validation import did_you_mean

                raise ConfigError(f"--group-by {key}: no run has this key{did_you_mean(key, sorted(known))}")
        for run, flat in zip(used, flats, strict=True):
            run.group = " ".join(f"{k}={_value(run, flat, k)}" for k in keys)
        return
    by_algo = len({r.algo for r in used}) > 1
    buckets: dict[tuple[str, str], list[FlatConfig]] = {}
    for run, flat in zip(used, flats, strict=True):
        buckets.setdefault((run.env, run.algo), []).append(flat)
    differing: dict[str, set[str]] = {}  # per algorithm, over all its envs: one name for a group on every env
    for (_, algo), bucket in buckets.items():
        for key in set().union(*(f.keys() for f in bucket)):
            if _grouped(key) and len({repr(f.get(key, "-")) for f in bucket}) > 1:
                differing.setdefault(algo, set()).add(key)
    # a long name (runs tried out by hand differ in many keys): only the keys where a run departs from the
    # value most of its algorithm's runs have; the name still tells the groups apart
    usual: dict[str, dict[str, str]] = {}
    for algo in differing:
        runs_of = [f for run, f in zip(used, flats, strict=True) if run.algo == algo]
        usual[algo] = {k: Counter(repr(f.get(k, "-")) for f in runs_of).most_common(1)[0][0] for k in differing[algo]}
    full = [
        " ".join(f"{k}={f.get(k, '-')}" for k in sorted(differing.get(r.algo, ())))
        for r, f in zip(used, flats, strict=True)
    ]
    long = {run.algo for run, name in zip(used, full, strict=True) if len(name) > LONG_NAME}
    for run, flat in zip(used, flats, strict=True):
        keys = sorted(differing.get(run.algo, ()))
        if run.algo in long:
            keys = [k for k in keys if repr(flat.get(k, "-")) != usual[run.algo][k]]
        parts = [f"algo={run.algo}"] if by_algo else []
        parts += [f"{k}={flat.get(k, '-')}" for k in keys]
        run.group = " ".join(parts) or run.algo


def differing_keys(runs: list[ReportRun]) -> list[str]:
    """The config keys (but the seed and NOT_GROUPED) whose values are not the same in every run."""
    flats = [r.flat for r in runs]
    every = set().union(*(f.keys() for f in flats)) if flats else set()
    return sorted(k for k in every if _grouped(k) and len({repr(f.get(k, "-")) for f in flats}) > 1)
