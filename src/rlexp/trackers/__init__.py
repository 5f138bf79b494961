"""Experiment trackers a run also reports to (logger.wandb, logger.mlflow), beside SB3's own formats:
each gets the composed config when the run starts, SB3's scalars with their steps as they are logged,
and the final agent, its statistics and summary.json as artifacts at the end. A resumed run continues
its tracker run (the ids are kept in summary.json's ``trackers``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from rlexp.errors import ConfigError

if TYPE_CHECKING:  # (the front door checks the extras without loading SB3)
    from stable_baselines3.common.logger import KVWriter

    from rlexp.config.schema import LoggerConfig
    from rlexp.rundir.record import RunRecord

EXTRAS = {"wandb": "wandb", "mlflow": "mlflow"}  # tracker -> the module it needs (and the extra naming it)


class Tracker(Protocol):
    """One tracker run; ``record`` is what summary.json keeps of it (its id, where it is)."""

    name: str  # wandb, mlflow: its logger.<name> keys
    record: dict[str, Any]

    def writer(self) -> KVWriter: ...

    def finish(self, run_dir: Path, run: RunRecord) -> None: ...


def requested(logger: LoggerConfig) -> list[str]:
    """The trackers ``logger`` (the experiment config's ``logger``) enables."""
    return [name for name in EXTRAS if getattr(getattr(logger, name, None), "enabled", False)]


def check_installed(logger: LoggerConfig) -> None:
    """Refused before any run dir exists: a tracker whose library is missing."""
    import importlib

    for name in requested(logger):
        try:
            importlib.import_module(EXTRAS[name])
        except ImportError:
            raise ConfigError(
                f"logger={name} needs the {name} extra ({EXTRAS[name]} is missing): pip install 'rlexp[{name}]'"
            ) from None
    mode = logger.wandb.mode if "wandb" in requested(logger) else None
    if mode is not None and mode.value == "online":
        from rlexp.trackers.wandb_tracker import default_mode

        if default_mode() == "offline":
            raise ConfigError(
                "logger.wandb.mode=online: no W&B API key is configured (wandb login, or WANDB_API_KEY); "
                "leave the mode unset to log offline"
            )


def start_trackers(logger: LoggerConfig, run_dir: Path, run: RunRecord, config: dict[str, Any]) -> list[Tracker]:
    """The trackers ``logger`` (the experiment config's ``logger``) enables, started (or continued, on
    resume: ``run.trackers``, summary.json's ``trackers``, holds their records, and each started tracker's
    record is put in) for the run ``run`` records (its start time, algorithm, env id and seed).

    ``config``: the composed config as plain data (rlexp.config.plain.plain_dict), which a tracker records
    whole as the run's parameters: that is what a tracker is for, so it takes the whole tree, as data."""
    import logging

    kept = run.trackers
    found: list[Tracker] = []
    for name in requested(logger):
        try:
            if name == "wandb":
                from rlexp.trackers.wandb_tracker import WandbTracker

                tracker: Tracker = WandbTracker(logger.wandb, run_dir, kept.get(name), run.start_time, config)
            else:
                from rlexp.trackers.mlflow_tracker import MlflowTracker

                tracker = MlflowTracker(logger.mlflow, run_dir, kept.get(name), run, config)
        except Exception as err:  # (a server down, a bad URI): the run dir keeps everything a tracker would get
            logging.getLogger(__name__).warning(
                "logger.%s: could not start its run, training goes on without it: %s: %s", name, type(err).__name__, err
            )
            continue
        kept[name] = tracker.record
        found.append(tracker)
    return found


def finish_trackers(trackers: list[Tracker], run_dir: Path, run: RunRecord) -> None:
    """Artifacts and final status to each tracker; a tracker that fails is a warning, never the run's
    failure (the run dir holds everything it would have uploaded)."""
    import logging

    for tracker in trackers:
        try:
            tracker.finish(run_dir, run)
        except Exception as err:
            logging.getLogger(__name__).warning(
                "logger.%s: could not finish its run: %s: %s", tracker.name, type(err).__name__, err
            )
