"""The run dir's life: is it new, a run to resume, a completed run, or someone else's run to leave alone?

A run never writes into a directory that holds another run; a run stopped by a signal, or whose process
died, is continued there (rlexp.lifecycle.resume says from where).
"""

from __future__ import annotations

import copy
import logging
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlexp.config.plain import plain_dict
from rlexp.errors import ConfigError
from rlexp.lifecycle.lock import abandoned, is_free
from rlexp.lifecycle.resume import ResumePoint, resume_point, set_aside
from rlexp.rundir.agents import recover_partial_saves
from rlexp.rundir.contract import (
    ABORTED,
    COMPLETED,
    HYDRA_DIR,
    INTERRUPTED,
    LATEST_LINK,
    LOCK_FILE,
    RUNNING,
    SUMMARY_FILE,
    read_command,
    read_config,
)
from rlexp.rundir.record import RunRecord, read_record

log = logging.getLogger(__name__)


# the status shown for a run whose summary.json says running but whose process is gone (never written:
# the run could not write it); every command that shows a run's status shows this one
DIED = "died"


def status_now(record: RunRecord, run_dir: Path) -> str:
    """The run's status as it is now: summary.json's, except ``died`` for a run that it says is running
    whose process is gone (rlexp.lifecycle.lock.abandoned)."""
    return DIED if record.status == RUNNING and abandoned(record, run_dir) else record.status


# how a run that can go on in its dir ended, by its status now
_ENDED = {
    DIED: "died before it finished",
    ABORTED: "was aborted by a second Ctrl-C before it finished",
    INTERRUPTED: "was stopped by a signal",
}


@dataclass(frozen=True)
class Unfinished:
    """A run that ended before it finished and can go on in its dir: its status now (died, aborted,
    interrupted), the step it continues from (None: no intact checkpoint, it would start over) and the
    command that continues it (its command.txt)."""

    run_dir: Path
    status: str
    step: int | None
    command: str

    @property
    def ended(self) -> str:
        """``died before it finished (newest checkpoint: step 2,048)``, or that it saved nothing."""
        if self.step is None:
            return f"{_ENDED[self.status]}, with no checkpoint to continue from (callbacks=checkpoints saves them)"
        saved = "saved at" if self.status == INTERRUPTED else "newest checkpoint:"
        return f"{_ENDED[self.status]} ({saved} step {self.step:,})"

    def __str__(self) -> str:
        """The run's state and the command that continues it, for the commands that show a run."""
        if self.step is None:
            return f"the run {self.ended}"
        return f"the run {self.ended}; to continue it from there: {self.command}"

    def rerun_line(self) -> str:
        """What the same command says when it starts a new run after this one (rlexp.run.manager)."""
        line = f"the last run of this config, {self.run_dir}, {self.ended}; this command starts a new run"
        if self.step is None:
            return line
        return f"{line}; to continue that one from step {self.step:,} instead: {self.command}"


def unfinished(record: RunRecord, run_dir: Path) -> Unfinished | None:
    """How the run in ``run_dir`` continues when it ended unfinished (died, aborted, stopped by a signal):
    from its resume point (rlexp.lifecycle.resume), by its command.txt; None for any other run."""
    status = status_now(record, run_dir)
    if status not in _ENDED:
        return None
    point = resume_point(run_dir, record)
    command = read_command(run_dir) or f"its command with hydra.run.dir={run_dir}"
    return Unfinished(run_dir, status, None if point is None else point.step, command)


# the newest earlier runs of the folder read for one of the same config (a run's start reads no more)
LOOKED_BACK = 20


def unfinished_before(config: dict[str, Any], run_dir: Path) -> Unfinished | None:
    """For a run starting in a folder of runs (outputs/<algo>-<env>/, whose ``latest`` points at it): the
    newest earlier run of the same config there, when it ended unfinished (the same command run again
    after a run was killed starts a new run: this says which run it leaves behind, and how it continues).
    ``config``: the run's composed config as plain data (config_difference: the whole is compared)."""
    folder = run_dir.parent
    link = folder / LATEST_LINK
    if not link.is_symlink() or link.resolve() != run_dir.resolve():
        return None
    earlier = sorted(
        (d for d in folder.iterdir() if d.name < run_dir.name and not d.name.startswith(".") and not d.is_symlink()),
        reverse=True,
    )
    for other in earlier[:LOOKED_BACK]:
        try:
            record = read_record(other)
            if (
                record is None
                or (record.seed, record.env_id) != (config["seed"], config["env"]["id"])
                or config_difference(config, other)
            ):
                continue
        except (ConfigError, OSError):  # (an unreadable run is not this config's, as far as can be told)
            continue
        return unfinished(record, other)
    return None


def completed_run(run_dir: Path) -> RunRecord | None:
    record = read_record(run_dir)
    return record if record is not None and record.status == COMPLETED else None


def _first_difference(old: Any, new: Any, path: str = "") -> str:
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(old.keys() | new.keys(), key=str):
            where = f"{path}.{key}" if path else str(key)
            if key not in old or key not in new:
                return where
            found = _first_difference(old[key], new[key], where)
            if found:
                return found
        return ""
    return "" if old == new else path


# how a run reports, not what it trains: a run resumed with other logger, curves or diagnostics settings
# (or under an rlexp whose defaults for them changed, or that added some) is the same run
NOT_COMPARED = ("logger", "curves", "diagnostics", "env.reward_threshold")


def config_difference(config: dict[str, Any], run_dir: Path) -> str:
    """The first key where ``config`` differs from the config of the run in ``run_dir`` ('' if none).

    ``config``: a run's composed config as plain data (rlexp.config.plain.plain_dict): whole, because
    whether two runs are one is decided by every key they train with (NOT_COMPARED aside)."""
    old, new = plain_dict(read_config(run_dir)), copy.deepcopy(config)
    for key in NOT_COMPARED:
        *parents, last = key.split(".")
        for config in (old, new):
            for parent in parents:
                config = config.get(parent) or {}
            config.pop(last, None)
    return "" if old == new else _first_difference(old, new) or "?"


def check_run_dir(
    config: dict[str, Any], run_dir: Path, keep_completed: bool = False, warn: bool = False
) -> tuple[RunRecord, ResumePoint | None] | None:
    """Refuses a run dir that holds another run; returns the record and resume point of this run when
    it is there to continue (point None: no intact checkpoint is left, and it starts over), else None.

    ``config``: the run's composed config as plain data (config_difference); ``keep_completed``: this run,
    completed, is accepted (a multirun run again keeps it); ``warn``: about damaged agents passed over."""
    record = read_record(run_dir)
    if record is None:
        return None
    if keep_completed and record.status == COMPLETED and not config_difference(config, run_dir):
        return None
    point = resume_point(run_dir, record, warn)
    # an interrupted run whose resume agent is damaged, with no intact checkpoint either, starts over
    if point is None and record.status != INTERRUPTED and not abandoned(record, run_dir):
        status = record.status
        where = f"{record.host} pid {record.pid}"
        owner = (
            f", by {where}, which {'may be' if is_free(run_dir) else 'is'} still running" if status == RUNNING else ""
        )
        raise ConfigError(
            f"hydra.run.dir={run_dir} already holds a run (status {status}{owner}); choose a new "
            f"directory (to continue that agent: trained_agent={run_dir})"
        )
    differs = config_difference(config, run_dir)
    if differs:
        raise ConfigError(
            f"hydra.run.dir={run_dir} holds an interrupted run with another config (differs at "
            f"{differs}); to continue it, re-run its command (command.txt)"
        )
    return record, point


def resumable_run(config: dict[str, Any], run_dir: Path) -> tuple[RunRecord, ResumePoint] | None:
    """The record of the run to continue in ``run_dir`` (stopped by a signal, or its process died;
    same ``config``, the composed config as plain data) and where to continue it from; None for a new run
    dir, or for an abandoned run that saved nothing (its files are set aside and it starts over). Any
    other run there is refused."""
    if (run_dir / SUMMARY_FILE).is_file():
        recover_partial_saves(run_dir)  # before the resume point is chosen and best/ is read
    found = check_run_dir(config, run_dir, warn=True)
    if found is None:
        return None
    record, point = found
    if point is None:
        log.warning(
            "the run in %s ended without an intact checkpoint; starting over (its files: %s)",
            run_dir,
            set_aside(run_dir),
        )
        return None
    return record, point


def only_hydra_files(run_dir: Path) -> bool:
    """The dir holds nothing but what Hydra writes for a job (.hydra/ and the job's log) and the lock."""
    return run_dir.is_dir() and all(p.name in (HYDRA_DIR, LOCK_FILE) or p.suffix == ".log" for p in run_dir.iterdir())


def remove_created(run_dir: Path, created: Path | None) -> None:
    """Removes a run dir that a refused command created (``created``: the topmost dir it made) while it
    holds nothing but Hydra's files, and the parents it made when they are empty; never a dir that was
    there before."""
    if created is None or not run_dir.resolve().is_relative_to(created.resolve()) or not only_hydra_files(run_dir):
        return
    shutil.rmtree(run_dir, ignore_errors=True)
    parent = run_dir.parent
    while parent.resolve().is_relative_to(created.resolve()):
        try:
            parent.rmdir()
        except OSError:  # not empty: another run is there now
            return
        parent = parent.parent
