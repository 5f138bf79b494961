"""Training, the command's default verb (``rlexp <overrides>``): the Hydra task of one job, a run or a
search trial, and what the command prints when a run ends."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from hydra.conf import HydraConf
from hydra.core.hydra_config import HydraConfig
from hydra.errors import HydraException
from hydra.types import RunMode
from omegaconf import DictConfig
from omegaconf.errors import OmegaConfBaseException

from rlexp.config.overrides import as_override
from rlexp.errors import ConfigError, Interrupted
from rlexp.run.mistakes import one_line

if TYPE_CHECKING:  # (torch and SB3 load only when a run starts)
    from rlexp.rundir.record import RunRecord

# errors caused by what the user typed or configured: reported in one line, without a traceback
USER_ERRORS = (ConfigError, HydraException, OmegaConfBaseException)
FULL_ERROR = os.environ.get("HYDRA_FULL_ERROR") == "1"  # as the user set it (the command sets it for Hydra)


def train_job(cfg: DictConfig, exit_on_error: bool = True) -> float:
    """The Hydra task of `rlexp` and of ``rlexp.train``: trains the job of the current HydraConfig and returns
    its final mean evaluation reward (for sweepers).

    A user error of a single run exits with its line (``exit_on_error``, the command) or is raised (the
    Python API), after removing what the refused run created."""
    # torch and SB3 load only when a run starts (fast --help, --cfg)
    from rlexp.config.schema import as_experiment
    from rlexp.lifecycle.lock import InUse
    from rlexp.lifecycle.state import only_hydra_files, remove_created
    from rlexp.run import front_door
    from rlexp.run.manager import run
    from rlexp.run.trial import run_trial
    from rlexp.rundir.latest import point_latest
    from rlexp.search.study import ENV_TRIAL, job_trial

    config = as_experiment(cfg)  # (Hydra's task gets the composed config: read through its schema from here)
    hydra_cfg = HydraConfig.get()
    multirun = hydra_cfg.mode == RunMode.MULTIRUN
    run_dir, choices = Path(hydra_cfg.runtime.output_dir), dict(hydra_cfg.runtime.choices)
    checked = front_door.checked(run_dir)  # a single run was checked before its dir existed
    try:
        command = ["rlexp", *hydra_cfg.overrides.task]
        # what re-runs a single run exactly (command.txt, the resume hint): its hydra.* overrides too
        rerun = None if multirun else rerun_command(hydra_cfg, run_dir)
        warnings = checked.warnings if checked else front_door.check(config, choices, list(hydra_cfg.overrides.task))
        # the newest run of the default dirs, found as outputs/<algo>-<env>/latest (multirun/latest)
        where = "hydra.sweep.dir=" if multirun else "hydra.run.dir="
        if not any(o.startswith(where) for o in hydra_cfg.overrides.hydra):
            point_latest(Path(hydra_cfg.sweep.dir).resolve() if multirun else run_dir.resolve())
        trial = job_trial()  # set when this job is a trial of an rlexp search
        if trial is None:
            # a multirun run again (e.g. resubmitted to SLURM) keeps the runs it completed
            return run(config, run_dir, choices, command, warnings, None, multirun, rerun, print_run_end).final_mean
        n_seeds = int(hydra_cfg.sweeper.get("seeds_per_trial", 1))
        alone = [*command, *shaping_overrides(hydra_cfg, SEARCH_PLUMBING), "hydra.mode=RUN"]
        return run_trial(config, run_dir, choices, command, warnings, trial, n_seeds, print_run_end, alone)
    except Interrupted as err:
        if err.completed is not None and not multirun:  # nothing left to stop
            print(f"rlexp: {err}; it is complete", file=sys.stderr)
            return err.completed
        if multirun:
            if not os.environ.get(ENV_TRIAL):
                err.hint = f"to finish the multirun, re-run the same command with hydra.sweep.dir={hydra_cfg.sweep.dir}"
            elif err.completed is None:
                err.hint = (
                    "the trial is queued again: the search's next worker to ask for a trial, or this command "
                    "run again, continues it from this checkpoint (same seed and run dir)"
                )
            else:
                err.hint = "re-run the same command to continue the search"
        raise
    except USER_ERRORS as err:
        # refused before the run wrote anything: no run dir is left behind (a multirun job's dir is the sweep's)
        if checked is not None:
            remove_created(run_dir, checked.created)
        elif multirun and only_hydra_files(run_dir) and not isinstance(err, InUse):  # an owner's dir stays
            shutil.rmtree(run_dir, ignore_errors=True)
        # a multirun job re-raises, so that the launcher records the failure and the sweep goes on
        if FULL_ERROR or multirun or not exit_on_error:
            raise
        exit_with(err)


def print_run_end(record: RunRecord, run_dir: Path, kept: bool) -> None:
    """What the command prints when a run completes (or was complete already): its diagnostics, then where
    it is and how it scored."""
    from rlexp.commands.console import say
    from rlexp.run.end_lines import run_end_lines

    if kept:  # (printed only: the completed run's files, rlexp.log among them, stay as they were)
        print(f"rlexp: {run_dir} already holds this run, completed (final eval {record.final_mean:.2f})")
        return
    for line in run_end_lines(record, run_dir):
        say(line)


def exit_with(err: BaseException) -> NoReturn:
    print(f"rlexp: error: {one_line(err)}", file=sys.stderr)
    sys.exit(1)


def rerun_command(hydra_cfg: HydraConf, run_dir: Path) -> list[str]:
    """The command that runs this single run again in ``run_dir``: its overrides, the hydra.* ones that
    shape the config (searchpath...) and the run dir, each quoted for Hydra (a path with spaces)."""
    kept = shaping_overrides(hydra_cfg, ())
    return ["rlexp", *hydra_cfg.overrides.task, *kept, as_override("hydra.run.dir", str(run_dir))]


# a search trial's hydra.* overrides that belong to the search, not to the run (a trial's command.txt
# runs it alone: the sweeper would refuse its seed, and the storage's URL may hold a password)
SEARCH_PLUMBING = (
    "hydra.sweep",
    "hydra.launcher",
    "hydra/launcher",
    "hydra/sweeper",
    "hydra.job.env_set",
    "hydra.job.num",
)


def shaping_overrides(hydra_cfg: HydraConf, left_out: tuple[str, ...]) -> list[str]:
    """The hydra.* overrides that a command re-running a run keeps: those that shape its config."""
    dropped = ("hydra.run.dir=", "hydra.mode=", *left_out)
    return [o for o in hydra_cfg.overrides.hydra if not o.lstrip("+").startswith(dropped)]
