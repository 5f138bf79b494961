"""``latest``: a link to the newest run dir of a folder of runs (outputs/ppo-cartpole/latest), and to the
newest sweep dir (multirun/latest), so that a user finds the run just made without listing timestamps:
``rlexp evaluate outputs/ppo-cartpole/latest``. Readers of folders of runs never follow it (pathlib's
``**`` does not), so no run is counted twice."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from rlexp.rundir.contract import LATEST_LINK


def point_latest(run_dir: Path) -> None:
    """``run_dir``'s parent gets ``latest`` -> ``run_dir`` (relative: the folder can move), replaced in one
    step; a ``latest`` that is not a link (a run a user named so) is left alone."""
    link = run_dir.parent / LATEST_LINK
    if link.exists() and not link.is_symlink():
        return
    temporary = run_dir.parent / f".{LATEST_LINK}.{os.getpid()}"
    with contextlib.suppress(OSError):  # (a file system without links: nothing to point with)
        temporary.unlink(missing_ok=True)
        temporary.symlink_to(run_dir.name, target_is_directory=True)
        os.replace(temporary, link)
