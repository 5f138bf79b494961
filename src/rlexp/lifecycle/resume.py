"""Where a run stopped by a signal, or whose process died, continues from: the agent saved on the signal
or its newest intact checkpoint; an abandoned run with neither has its files set aside and starts over."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from rlexp.lifecycle import lock
from rlexp.rundir.agents import damage
from rlexp.rundir.contract import ABANDONED_PREFIX, INTERRUPTED, MODEL_FILE, RESUME_DIR, checkpoint_steps
from rlexp.rundir.record import RunRecord

log = logging.getLogger(__name__)


@dataclass
class ResumePoint:
    """A saved agent of the run to continue from, and the step it was saved at."""

    path: Path
    step: int


def resume_point(run_dir: Path, record: RunRecord, warn: bool = False) -> ResumePoint | None:
    """Where to continue the run in ``run_dir``: the agent saved on a signal; for an abandoned run, the
    newest of its checkpoints. A damaged agent is passed over for the next newest (``warn``: saying so);
    None when none is left (the run starts over)."""
    resume = run_dir / RESUME_DIR
    found = []
    if record.status == INTERRUPTED and record.steps is not None:
        found.append(ResumePoint(resume, record.steps))
    elif not lock.abandoned(record, run_dir):
        return None
    elif isinstance(record.resumed, list) and record.resumed:  # saved before the last resumption
        found.append(ResumePoint(resume, int(record.resumed[-1]["step"])))
    found += [ResumePoint(d, step) for step, d in checkpoint_steps(run_dir).items()]
    for point in sorted(found, key=lambda point: point.step, reverse=True):
        if not (point.path / MODEL_FILE).is_file():
            continue
        damaged = damage(point.path)
        if damaged is None:
            return point
        if warn:
            log.warning("%s; passing over the agent saved at step %d", damaged, point.step)
    return None


def set_aside(run_dir: Path) -> Path:
    """Moves what an abandoned run without a checkpoint wrote into a hidden ``.abandoned_<n>/`` of its
    run dir, so that it can start over there (Hydra's .hydra/ and job log stay: they are the new job's)."""
    n = 1 + len(list(run_dir.glob(f"{ABANDONED_PREFIX}*")))
    aside = run_dir / f"{ABANDONED_PREFIX}{n}"
    aside.mkdir()
    for path in run_dir.iterdir():
        if not path.name.startswith(".") and path.suffix != ".log":
            path.rename(aside / path.name)
    return aside
