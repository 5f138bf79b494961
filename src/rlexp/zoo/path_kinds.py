"""What a path given to rlexp is: an rlexp run dir, a search trial of several seeds, an RL Zoo log folder, a
model zip, or none of these. Decided here once, by ``what_is``, for every reader (the API's ``Run``, the
report, the commands that open agents, ``trained_agent=``, ``rlexp verify``); each caller then does what it
does with each kind (the report leaves a run that never started out with its reason, the API raises).

It sits in rlexp.zoo, the lowest layer that knows both runners' folders: rlexp's run dir by its files
(rlexp.rundir.contract) and the zoo's log folder (rlexp.zoo.log_folders)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from rlexp.rundir.contract import CONFIG_FILE, MODEL_FILE, SEED_DIR_PREFIX, SUMMARY_FILE
from rlexp.zoo.log_folders import ZooRun, find_zoo_run


class PathKind(Enum):
    """The kinds of path rlexp reads runs from."""

    RUN = "rlexp run dir"
    TRIAL = "search trial"
    ZOO = "RL Zoo log folder"
    MODEL = "model zip"
    NOTHING = "none of these"


@dataclass(frozen=True)
class Found:
    """A path and what it is.

    kind: which of PathKind's kinds the path is.
    path: the path as given.
    zoo: the RL Zoo run (ZOO only: the log folder, or the folder of the zip given).
    configured: RUN only: its config.yaml is there (it got past its checks; what the API and verify open).
    started: RUN only: its summary.json is there (it started; what a report reads).
    seeds: TRIAL only: the names of its seeds' run dirs (``seed_<n>``).
    """

    kind: PathKind
    path: Path
    zoo: ZooRun | None = None
    configured: bool = False
    started: bool = False
    seeds: tuple[str, ...] = ()


def what_is(path: Path) -> Found:
    """What ``path`` is, by these rules, in this order:

    1. A file: a ``model.zip`` is rlexp's (MODEL); another file in an RL Zoo log folder is that run's agent
       (ZOO); any other file is taken as a model zip (MODEL: its opener checks it is one).
    2. A dir holding ``config.yaml`` or ``summary.json`` is an rlexp run dir (RUN), whatever else it holds. A
       search trial's or a SLURM job's run is one too: rlexp writes them alike (the job id is in summary.json).
       A run refused before it started has config.yaml and maybe no summary.json (``started`` False).
    3. A dir rlexp.zoo.log_folders.find_zoo_run takes (``<EnvId>/args.yml`` and ``config.yml`` in it) is an
       RL Zoo log folder (ZOO).
    4. A dir whose ``seed_<n>`` subdirs are run dirs is a search trial of several seeds (TRIAL).
    5. Anything else, a missing path included: NOTHING."""
    if path.is_file():
        zoo = None if path.name == MODEL_FILE else find_zoo_run(path)
        return Found(PathKind.ZOO, path, zoo=zoo) if zoo is not None else Found(PathKind.MODEL, path)
    if not path.is_dir():
        return Found(PathKind.NOTHING, path)
    configured, started = (path / CONFIG_FILE).is_file(), (path / SUMMARY_FILE).is_file()
    if configured or started:
        return Found(PathKind.RUN, path, configured=configured, started=started)
    zoo = find_zoo_run(path)
    if zoo is not None:
        return Found(PathKind.ZOO, path, zoo=zoo)
    seeds = tuple(sorted(d.name for d in path.glob(f"{SEED_DIR_PREFIX}*") if (d / CONFIG_FILE).is_file()))
    return Found(PathKind.TRIAL, path, seeds=seeds) if seeds else Found(PathKind.NOTHING, path)
