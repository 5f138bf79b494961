"""The `rlexp` command: a Hydra app whose configs ship inside the package (pkg://rlexp.conf)."""

from __future__ import annotations

import argparse
import errno
import functools
import logging
import os
import re
import shlex
import sys
from collections.abc import Callable
from typing import NoReturn

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig

from rlexp.commands import is_verb, run_verb
from rlexp.commands.console import show_warnings_on_one_line
from rlexp.commands.train import FULL_ERROR as _FULL_ERROR
from rlexp.commands.train import USER_ERRORS, exit_with, train_job
from rlexp.config import hydra_versions
from rlexp.config.overrides import as_override
from rlexp.errors import Diverged, Interrupted, Refused, Stopped, collapsed
from rlexp.process_exit import exit_without_teardown, stopped_by_ctrl_c
from rlexp.run.hydra_session import command_overrides, register_hydra
from rlexp.zoo.flags import zoo_line

register_hydra()

# a disk full, over quota, read-only or not ours: said in one line naming the path
_STORAGE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM}


@hydra.main(config_path="pkg://rlexp.conf", config_name="config", **hydra_versions.main_options())
def app(cfg: DictConfig) -> float:
    """Train one agent as configured; returns the final mean evaluation reward (for sweepers)."""
    return train_job(cfg)


def _stopped(err: Interrupted) -> None:
    """A run stopped by a signal saved a checkpoint: say how to go on; exit as the signal would."""
    if err.checkpoint is None:  # it came as a run completed
        print(f"rlexp: {err}; {err.hint}", file=sys.stderr)
    else:
        hint = err.hint or f"to finish the run: {shlex.join(err.command)}"
        print(f"rlexp: {err}; checkpoint in {err.checkpoint}; {hint}", file=sys.stderr)
    sys.exit(128 + err.signum)


# a job that ended without a result: submitit's error, local_parallel's (rlexp.cluster.forked_jobs)
_JOB_DIED = ("UncompletedJobError", "JobDied")


def _job_died(err: Exception) -> None:
    """A job (submitit's on SLURM or here, local_parallel's) ended without a result, e.g. cancelled or
    stopped by SIGTERM."""
    text = collapsed(str(err).split("Error stream produced:")[0])
    sweep_dir = re.search(r"with path (\S+)/\.submitit/", text) or re.search(r"its output: (\S+)/\.jobs/", text)
    hint = (
        f"; if it was stopped by a signal, its run dir kept a checkpoint: re-running the same command "
        f"with hydra.sweep.dir={sweep_dir.group(1)} resumes it (and keeps the runs that completed)"
        if sweep_dir
        else ""
    )
    print(f"rlexp: error: {text}{hint}", file=sys.stderr)
    sys.exit(1)


def main() -> None:
    """Console script: user errors in one line and exit 1; full traceback with HYDRA_FULL_ERROR=1."""
    # env.id=my_pkg.envs:MyEnv finds my_pkg in the working directory, as `python -m` would
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.append(os.getcwd())
    show_warnings_on_one_line()
    # a log line that cannot be written (a full disk) is dropped, not reported with the traceback of the
    # error being handled (Hydra 1.4 logs a failed job's to RUN/rlexp.log): the run's own line names the path
    logging.raiseExceptions = _FULL_ERROR
    if len(sys.argv) > 1 and sys.argv[1] == "check":
        # the config composed as rlexp.compose composes it, no Hydra run; its errors said as training's
        from rlexp.commands.check import main as check

        _main(lambda: sys.exit(check(sys.argv[2:])))
        return
    if len(sys.argv) > 1 and is_verb(sys.argv[1]):  # rlexp evaluate RUN ...: a command that reads runs
        run_verb(sys.argv[1:])
    _refuse_foreign_flags(sys.argv[1:])
    overrides, flags = _split_flags(sys.argv[1:])
    _refuse_two_modes(flags)
    _refuse_blank_dirs(overrides)
    overrides, moved = command_overrides(overrides)
    sys.argv[1:] = [*overrides, *flags]  # Hydra's argparse takes its overrides as one run of words
    if moved is not None:
        print(f"rlexp: {moved}", file=sys.stderr)
    _main(_app)


@functools.cache
def _hydra_flags() -> dict[str, argparse.Action]:
    """Hydra's own flags by option string (the rest of a command line are overrides, which never start
    with "-"), read from Hydra's parser so that a flag a Hydra release adds is known here too."""
    from hydra._internal.utils import get_args_parser

    return {option: action for action in get_args_parser()._actions for option in action.option_strings}


def _split_flags(args: list[str]) -> tuple[list[str], list[str]]:
    """The overrides and Hydra's flags (each with its value) of a command line, where a user may put a
    flag anywhere: `rlexp algo=ppo -m seed=0,1` (argparse alone refuses overrides on both sides of a flag)."""
    known = _hydra_flags()
    overrides: list[str] = []
    flags: list[str] = []
    i = 0
    while i < len(args):
        word = args[i]
        action = known.get(word.split("=", 1)[0]) if word.startswith("-") else None
        (flags if action else overrides).append(word)
        i += 1
        takes_value = "=" not in word and i < len(args)
        # -c job, -cp DIR take the next word; -i only one of its choices
        if (
            action is not None
            and takes_value
            and (action.nargs is None or (action.nargs == "?" and args[i] in (action.choices or ())))
        ):
            flags.append(args[i])
            i += 1
    return overrides, flags


def _refuse_two_modes(flags: list[str]) -> None:
    """Hydra raises a ValueError (a traceback) for two of its exclusive modes, and prints its usage for a flag
    without its value; one line instead."""
    known = _hydra_flags()
    for i, flag in enumerate(flags):
        action = known.get(flag.split("=", 1)[0]) if flag.startswith("-") else None
        bare = "=" not in flag and (i + 1 == len(flags) or flags[i + 1].startswith("-"))
        if action is not None and action.nargs is None and bare:
            choices = f" ({', '.join(action.choices)})" if action.choices else ""
            print(f"rlexp: error: {flag} takes a value{choices}", file=sys.stderr)
            sys.exit(1)
    modes = {"run", "multirun", "cfg", "info", "shell_completion"}
    given = {known[flag.split("=", 1)[0]].dest: flag for flag in flags if flag.startswith("-")}
    given = {dest: flag for dest, flag in given.items() if dest in modes}
    if len(given) > 1:
        print(
            f"rlexp: error: {' and '.join(given.values())}: only one of --run, --multirun, --cfg, --info and "
            "--shell-completion at a time",
            file=sys.stderr,
        )
        sys.exit(1)


# Hydra's dirs, which it takes empty as the working directory: a run would write its files among the user's
_DIR_KEYS = ("hydra.run.dir", "hydra.sweep.dir")


def _refuse_blank_dirs(overrides: list[str]) -> None:
    """``hydra.run.dir=`` with its value left out: refused in one line rather than a run in the working dir."""
    for override in overrides:
        key, eq, value = override.partition("=")
        if eq and key.lstrip("+") in _DIR_KEYS and not value.strip("'\" "):
            print(f"rlexp: error: {override}: no value; give a dir: {key}=<dir>", file=sys.stderr)
            sys.exit(1)


def _refuse_foreign_flags(args: list[str]) -> None:
    """RL Zoo's flags, or any flag Hydra does not know, in one line (Hydra's argparse prints its usage)."""
    line = zoo_line(args)
    if line is None:
        overrides, _ = _split_flags(args)
        unknown = next((a for a in overrides if a.startswith("-")), None)
        if unknown is None:
            return
        from rlexp.config.validation import did_you_mean

        meant = did_you_mean(unknown.split("=", 1)[0], sorted(_hydra_flags()))
        line = (
            f"rlexp: error: unrecognized argument {unknown}{meant}: rlexp takes key=value overrides and Hydra's "
            "flags (rlexp --help)"
        )
    print(line, file=sys.stderr)
    sys.exit(1)


def console() -> NoReturn:
    """The ``rlexp`` console script (and ``python -m rlexp``): ``main()``, then an exit that skips the
    interpreter's teardown (rlexp.process_exit)."""
    try:
        main()
        code: object = 0
    except SystemExit as done:
        code = done.code
    exit_without_teardown(code)


def _app() -> None:
    """The Hydra app; a multirun that a failed job ended still reports on the seeds that completed (not
    one stopped on purpose, resumed and reported later, nor one whose SLURM job died while its siblings
    may still be running)."""
    try:
        app()
    except (Exception, Refused) as err:
        seed_report = sys.modules.get("rlexp.run.seed_report")  # (loaded by Hydra's callbacks, if at all)
        if seed_report is not None and type(err).__name__ not in _JOB_DIED:
            seed_report.report_after_failure()
        front_door = sys.modules.get("rlexp.run.front_door")
        if front_door is not None:
            front_door.remove_unlaunched_sweep()
        raise
    finally:
        seed_report = sys.modules.get("rlexp.run.seed_report")
        if seed_report is not None:
            seed_report.forget()


def _main(command: Callable[[], None]) -> None:
    """Runs the command (the Hydra app, or `rlexp check`) with its errors as the command says them: a user's
    in one line and exit 1 (a traceback with HYDRA_FULL_ERROR=1), a stop by signal with how to go on."""
    try:
        if _FULL_ERROR:
            command()
            return
        # Hydra then re-raises composition errors to us instead of printing them over several lines
        os.environ["HYDRA_FULL_ERROR"] = "1"
        try:
            command()
        except USER_ERRORS as err:
            exit_with(err)
    except Refused as refused:
        if _FULL_ERROR or not isinstance(refused.error, USER_ERRORS):
            raise refused.error from None
        exit_with(refused.error)
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
        if type(err).__name__ not in _JOB_DIED or _FULL_ERROR:  # (submitit's imported only when used)
            raise
        _job_died(err)
    except KeyboardInterrupt:
        if _FULL_ERROR:
            raise
        _ctrl_c()
    except Stopped as err:
        _jobs_stopped(err)


def _jobs_stopped(err: Stopped) -> NoReturn:
    """A signal to a multirun or search waiting on its local_parallel jobs: they checkpointed and ended."""
    sweep_dir = as_override("hydra.sweep.dir", str(HydraConfig.get().sweep.dir)) if HydraConfig.initialized() else ""
    print(
        f"rlexp: {err}; its running jobs stopped at a checkpoint: to finish, re-run the same command with {sweep_dir}",
        file=sys.stderr,
    )
    sys.exit(128 + err.signum)


def _ctrl_c() -> NoReturn:
    """Ctrl-C before a run's own stop handling is in place (rlexp.lifecycle.preemption.StopOnSignal): no dir is left for a run
    that never started; a multirun says how to go on."""
    front_door = sys.modules.get("rlexp.run.front_door")
    if front_door is not None:
        front_door.remove_unstarted()
    if HydraConfig.initialized() and HydraConfig.get().mode == RunMode.MULTIRUN:
        sweep_dir = as_override("hydra.sweep.dir", str(HydraConfig.get().sweep.dir))
        stopped_by_ctrl_c(f"between jobs; to finish the multirun, re-run the same command with {sweep_dir}")
    stopped_by_ctrl_c("before the run started; nothing was written")


if __name__ == "__main__":
    main()
