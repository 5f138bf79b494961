"""The `rlexp` command: a Hydra app whose configs ship inside the package (pkg://rlexp.conf)."""

from __future__ import annotations

import argparse
import errno
import os
import re
import shlex
import shutil
import sys
import tempfile
from pathlib import Path
from typing import NoReturn

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.core.plugins import Plugins
from hydra.errors import HydraException
from hydra.types import RunMode
from omegaconf import DictConfig
from omegaconf.errors import OmegaConfBaseException

from hydra_plugins.rlexp_launcher.launcher import LocalParallelLauncher
from hydra_plugins.rlexp_optuna_sweeper.sweeper import OptunaSweeper
from rlexp import front_door
from rlexp.commands import is_verb, run_verb
from rlexp.errors import ConfigError, Diverged, Interrupted, Refused
from rlexp.overrides import as_override
from rlexp.process_exit import exit_without_teardown
from rlexp.schema import did_you_mean, integer_keys, register_configs, schema_fields

register_configs()
# Hydra finds plugins by walking the hydra_plugins namespace package, which misses modules that an
# editable install maps from src/; registering rlexp's plugins here makes both install kinds work.
Plugins.instance().register(OptunaSweeper)
Plugins.instance().register(LocalParallelLauncher)

# errors caused by what the user typed or configured: reported in one line, without a traceback
USER_ERRORS = (ConfigError, HydraException, OmegaConfBaseException)
_FULL_ERROR = os.environ.get("HYDRA_FULL_ERROR") == "1"  # as the user set it
# a disk full, over quota, read-only or not ours: said in one line naming the path
_STORAGE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM}
_DECIMAL = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_INTEGER = re.compile(r"[+-]?\d+")
# lines of Hydra's messages that do not help on one line (the "+" advice is wrong for typed groups)
_NOISE = ("object_type=", "To append to your config use", "Set the environment variable HYDRA_FULL_ERROR")
_check_options: argparse.Namespace | None = None  # set for `rlexp check`


@hydra.main(version_base="1.3", config_path="pkg://rlexp.conf", config_name="config")
def app(cfg: DictConfig) -> float:
    """Train one agent as configured; returns the final mean evaluation reward (for sweepers)."""
    return train_job(cfg)


def train_job(cfg: DictConfig, exit_on_error: bool = True) -> float:
    """The Hydra task of `rlexp` and of ``rlexp.train``: trains the job of the current HydraConfig.

    A user error of a single run exits with its line (``exit_on_error``, the command) or is raised (the
    Python API), after removing what the refused run created."""
    # torch and SB3 load only when a run starts (fast --help, --cfg)
    from rlexp.run.lock import InUse
    from rlexp.run.manager import run
    from rlexp.run.run_dir import only_hydra_files, remove_created
    from rlexp.search.study import ENV_TRIAL, job_trial
    from rlexp.search.trials import run_trial

    hydra_cfg = HydraConfig.get()
    multirun = hydra_cfg.mode == RunMode.MULTIRUN
    run_dir, choices = Path(hydra_cfg.runtime.output_dir), dict(hydra_cfg.runtime.choices)
    checked = front_door.checked(run_dir)  # a single run was checked before its dir existed
    if _check_options is not None:  # rlexp check: the env checks instead of training
        from rlexp.commands.check import report

        sys.exit(report(cfg, checked.warnings if checked else None, _check_options))
    try:
        command = ["rlexp", *hydra_cfg.overrides.task]
        # what re-runs a single run exactly (command.txt, the resume hint): its hydra.* overrides too
        rerun = None if multirun else _rerun_command(hydra_cfg, run_dir)
        warnings = checked.warnings if checked else front_door.check(cfg, choices, list(hydra_cfg.overrides.task))
        trial = job_trial()  # set when this job is a trial of an rlexp search
        if trial is None:
            # a multirun run again (e.g. resubmitted to SLURM) keeps the runs it completed
            return run(cfg, run_dir, choices, command, warnings, keep_completed=multirun, rerun=rerun)
        n_seeds = int(hydra_cfg.sweeper.get("seeds_per_trial", 1))
        return run_trial(cfg, run_dir, choices, command, warnings, trial, n_seeds)
    except Interrupted as err:
        if err.completed is not None and not multirun:  # nothing left to stop
            print(f"rlexp: {err}; it is complete", file=sys.stderr)
            return err.completed
        if multirun:
            err.hint = (
                "re-run the same command to continue the search"
                + (" (the stopped trial runs again)" if err.completed is None else "")
                if os.environ.get(ENV_TRIAL)
                else f"to finish the multirun, re-run the same command with hydra.sweep.dir={hydra_cfg.sweep.dir}"
            )
        raise
    except USER_ERRORS as err:
        # refused before the run wrote anything: no run dir is left behind (a multirun job's dir is the sweep's)
        if checked is not None:
            remove_created(run_dir, checked.created)
        elif multirun and only_hydra_files(run_dir) and not isinstance(err, InUse):  # an owner's dir stays
            shutil.rmtree(run_dir, ignore_errors=True)
        # a multirun job re-raises, so that the launcher records the failure and the sweep goes on
        if _FULL_ERROR or multirun or not exit_on_error:
            raise
        _exit_with(err)


def one_line(err: BaseException) -> str:
    """Hydra's and OmegaConf's multi-line messages (and their cause) on one line."""
    text = str(err)
    if isinstance(err.__cause__, OmegaConfBaseException) and str(err.__cause__) not in text:
        text += "\n" + str(err.__cause__)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    lines = [line for line in lines if not line.startswith(_NOISE)]
    for i, line in enumerate(lines):
        if line.startswith("Available options in"):
            rest = lines[i + 1 :]
            rest = rest[: rest.index("Config search path:")] if "Config search path:" in rest else rest
            return " ".join(lines[:i]) + f". {line} {', '.join(rest)}"
    text = " ".join(lines)
    unknown = re.search(r"Key '(\w+)' not in '(\w+)'", text)
    if unknown:  # a misspelt key: say which one was meant
        text += did_you_mean(unknown.group(1), schema_fields(unknown.group(2)))
    return text


def _exit_with(err: BaseException) -> None:
    print(f"rlexp: error: {one_line(err)}", file=sys.stderr)
    sys.exit(1)


def _rerun_command(hydra_cfg: DictConfig, run_dir: Path) -> list[str]:
    """The command that runs this single run again in ``run_dir``: its overrides, the hydra.* ones that
    shape the config (searchpath...) and the run dir, each quoted for Hydra (a path with spaces)."""
    from rlexp.overrides import as_override

    kept = [o for o in hydra_cfg.overrides.hydra if not o.startswith(("hydra.run.dir=", "hydra.mode="))]
    return ["rlexp", *hydra_cfg.overrides.task, *kept, as_override("hydra.run.dir", str(run_dir))]


def _stopped(err: Interrupted) -> None:
    """A run stopped by a signal saved a checkpoint: say how to go on; exit as the signal would."""
    if err.checkpoint is None:  # it came as a run completed
        print(f"rlexp: {err}; {err.hint}", file=sys.stderr)
    else:
        hint = err.hint or f"to finish the run: {shlex.join(err.command)}"
        print(f"rlexp: {err}; checkpoint in {err.checkpoint}; {hint}", file=sys.stderr)
    sys.exit(128 + err.signum)


def _job_died(err: Exception) -> None:
    """A submitit job (SLURM or local) ended without a result, e.g. cancelled or stopped by SIGTERM."""
    text = " ".join(str(err).split("Error stream produced:")[0].split())
    sweep_dir = re.search(r"with path (\S+)/\.submitit/", text)
    hint = (
        f"; if it was stopped by a signal, its run dir kept a checkpoint: re-running the same command "
        f"with hydra.sweep.dir={sweep_dir.group(1)} resumes it (and keeps the runs that completed)"
        if sweep_dir
        else ""
    )
    print(f"rlexp: error: {text}{hint}", file=sys.stderr)
    sys.exit(1)


def whole_numbers(args: list[str]) -> list[str]:
    """``n_timesteps=1e6`` -> ``n_timesteps=1000000`` for keys typed int: RL papers and RL Zoo's YAML
    write budgets and sizes as floats, which the typed schema would refuse. Sweeps (``1e5,1e6``) too."""
    keys = integer_keys()
    out = []
    for arg in args:
        key, eq, value = arg.partition("=")
        parts = [p.strip() for p in value.split(",")]
        whole = all(_DECIMAL.fullmatch(p) and float(p).is_integer() for p in parts)
        if eq and key.lstrip("+~") in keys and whole:  # integers stay as written
            arg = f"{key}={','.join(p if _INTEGER.fullmatch(p) else str(int(float(p))) for p in parts)}"
        out.append(arg)
    return out


def main() -> None:
    """Console script: user errors in one line and exit 1; full traceback with HYDRA_FULL_ERROR=1."""
    # env.id=my_pkg.envs:MyEnv finds my_pkg in the working directory, as `python -m` would
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.append(os.getcwd())
    checking = len(sys.argv) > 1 and sys.argv[1] == "check"
    if checking:
        scratch = _as_check(sys.argv[2:])
    elif len(sys.argv) > 1 and is_verb(sys.argv[1]):  # rlexp evaluate RUN ...: a command that reads runs
        run_verb(sys.argv[1:])
    sys.argv[1:] = whole_numbers(sys.argv[1:])
    try:
        _main()
    finally:
        if checking:
            shutil.rmtree(scratch, ignore_errors=True)


def console() -> NoReturn:
    """The ``rlexp`` console script (and ``python -m rlexp``): ``main()``, then an exit that skips the
    interpreter's teardown (rlexp.process_exit)."""
    try:
        main()
        code: object = 0
    except SystemExit as done:
        code = done.code
    exit_without_teardown(code)


def _as_check(args: list[str]) -> Path:
    """`rlexp check <overrides>` becomes the training command with the checks as its task, in a scratch
    run dir removed at the end: the config is composed and built exactly as a run's."""
    global _check_options
    from rlexp.commands.check import parse_options

    _check_options, overrides = parse_options(args)
    if any(arg.startswith("-") for arg in overrides):  # -m, --cfg ...: check takes overrides only
        print(
            f"rlexp check: error: {next(a for a in overrides if a.startswith('-'))} is not an option of check (one "
            "config at a time: key=value overrides)",
            file=sys.stderr,
        )
        sys.exit(1)
    scratch = Path(tempfile.mkdtemp(prefix="rlexp-check-"))
    # one run (hparams=search would make it a sweep); the checker runs in the report, where it can fail
    sys.argv[1:] = [
        *overrides,
        as_override("hydra.run.dir", str(scratch)),
        "hydra.output_subdir=null",
        "hydra.mode=RUN",
    ]
    sys.argv.append("env.check=false")
    return scratch


def _app() -> None:
    """The Hydra app; a multirun that a failed job ended still reports on the seeds that completed (not
    one stopped on purpose, resumed and reported later, nor one whose SLURM job died while its siblings
    may still be running)."""
    try:
        app()
    except (Exception, Refused) as err:
        multirun_end = sys.modules.get("rlexp.reporting.multirun_end")  # (loaded by Hydra's callbacks, if at all)
        if multirun_end is not None and type(err).__name__ != "UncompletedJobError":
            multirun_end.report_after_failure()
        raise
    finally:
        multirun_end = sys.modules.get("rlexp.reporting.multirun_end")
        if multirun_end is not None:
            multirun_end.forget()


def _main() -> None:
    try:
        if _FULL_ERROR:
            _app()
            return
        # Hydra then re-raises composition errors to us instead of printing them over several lines
        os.environ["HYDRA_FULL_ERROR"] = "1"
        try:
            _app()
        except USER_ERRORS as err:
            _exit_with(err)
    except Refused as refused:
        if _FULL_ERROR or not isinstance(refused.error, USER_ERRORS):
            raise refused.error from None
        _exit_with(refused.error)
    except Interrupted as err:
        _stopped(err)
    except Diverged as err:  # summary.json says failed, with this reason
        if _FULL_ERROR:
            raise
        print(f"rlexp: error: {err}", file=sys.stderr)
        sys.exit(1)
    except OSError as err:
        if _FULL_ERROR or err.errno not in _STORAGE_ERRNOS:
            raise
        print(f"rlexp: error: {err.filename or 'a run file'}: {err.strerror} (errno {err.errno})", file=sys.stderr)
        sys.exit(1)
    except Exception as err:
        if type(err).__name__ != "UncompletedJobError" or _FULL_ERROR:  # submitit's, imported only when used
            raise
        _job_died(err)


if __name__ == "__main__":
    main()
