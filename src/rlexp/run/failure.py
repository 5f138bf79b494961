"""What a run that did not complete leaves behind: its status and error in summary.json, a stop signal
handed on (a requeue), its trackers finished, its curves drawn (a failure) or cancelled (a stop)."""

from __future__ import annotations

import logging
from pathlib import Path

from rlexp.errors import Diverged, Interrupted
from rlexp.figures.curves import BackgroundCurves
from rlexp.lifecycle.preemption import StopOnSignal
from rlexp.rundir.contract import FAILED, RESUME_DIR, checkpoint_steps
from rlexp.rundir.record import RunRecord
from rlexp.trackers import Tracker, finish_trackers

log = logging.getLogger(__name__)


def record_failure(
    err: BaseException,
    record: RunRecord,
    run_dir: Path,
    stopper: StopOnSignal,
    trackers: list[Tracker],
    curves: BackgroundCurves | None,
    rerun: list[str],
) -> None:
    """Records how the run ended on ``err`` (which the caller re-raises); nothing here hides it."""
    if isinstance(err, OSError) and err.filename is None:  # e.g. ENOSPC from inside a writer: name the run
        err.filename = str(run_dir)
    record.fail(err)
    try:
        record.write()
    except OSError as write_err:  # e.g. the disk that failed the run is still full: its error matters
        log.error("could not record status %s in %s: %s", record.status, run_dir, write_err)
    finally:  # a second signal before the status is written must not cut the write
        stopper.restore()
    try:
        if isinstance(err, Interrupted):
            err.checkpoint, err.command = run_dir / RESUME_DIR, rerun
            err.forward()  # e.g. submitit's handler: requeues the SLURM job (first: its grace is short)
    finally:
        finish_trackers(trackers, run_dir, record)
        if curves is not None and record.status == FAILED:  # how it went until it failed
            curves.draw()
            curves.finish()
        elif curves is not None:
            curves.cancel()


def diverged(run_dir: Path, step: int, err: Diverged) -> Diverged:
    """The line of a run that met a NaN or inf: where, and the agent to go back to."""
    newest = next(reversed(checkpoint_steps(run_dir).values()), None)
    kept = f"; the newest checkpoint is {newest}" if newest else ""
    return Diverged(f"training in {run_dir} diverged at step {step}: {err}{kept}")
