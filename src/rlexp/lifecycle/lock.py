"""One owner per run dir: an exclusive lock on ``run_dir/.rlexp.lock``, held for the whole run.

The kernel releases it when the owner dies, however it dies (SIGKILL, out of memory), so on one host the
lock, not a PID, says whether a run is still going: PIDs get reused and, inside a PID namespace
(containers, ``unshare --pid``), every run is pid 1. The lock is ``flock(2)``; on NFS it holds across
hosts only where the mount supports it (NFSv4 does; ``local_lock=flock`` mounts keep it per host), so a
run written by another host is still judged by its SLURM job (rlexp.cluster.liveness).
"""

from __future__ import annotations

import fcntl
import os
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from rlexp.cluster.liveness import boot_id, owner_is_gone
from rlexp.errors import ConfigError
from rlexp.rundir.contract import ABORTED, LOCK_FILE, RUNNING

if TYPE_CHECKING:
    from rlexp.rundir.record import RunRecord

# run dirs whose lock this process holds -> the open file that holds it
_held: dict[Path, int] = {}


class InUse(ConfigError):
    """Another live process holds the run dir: nothing of it may be touched."""


def _wait_s() -> float:
    """How long to wait for a busy lock: a requeued SLURM job may start while its earlier attempt is
    still exiting on the same node; elsewhere only a moment (another process probing the lock)."""
    return 120.0 if os.environ.get("SLURM_JOB_ID") else 0.5


def hold(run_dir: Path) -> None:
    """Takes the lock of ``run_dir`` for this process (a no-op when it holds it already), creating the
    dir; refuses, naming the owner, a dir whose lock another process holds."""
    key = run_dir.resolve()
    if key in _held:
        return
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(run_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as err:  # read-only, no permission, no space
        raise ConfigError(f"hydra.run.dir={run_dir}: cannot write there ({err.strerror}, errno {err.errno})") from None
    deadline = time.monotonic() + _wait_s()
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if time.monotonic() < deadline:
                time.sleep(0.05)
                continue
            owner = os.read(fd, 200).decode(errors="replace").strip() or "an rlexp process"
            os.close(fd)
            raise InUse(
                f"hydra.run.dir={run_dir} is in use by {owner}; wait for it to end or choose another directory"
            ) from None
        except OSError as err:  # e.g. ENOLCK: a file system without locks
            os.close(fd)
            raise ConfigError(f"hydra.run.dir={run_dir}: cannot lock it ({err.strerror}, errno {err.errno})") from None
    os.ftruncate(fd, 0)
    os.write(fd, f"{socket.gethostname()} pid {os.getpid()}\n".encode())
    _held[key] = fd


def release(run_dir: Path) -> None:
    fd = _held.pop(run_dir.resolve(), None)
    if fd is not None:
        os.close(fd)  # closing the file releases the lock


@contextmanager
def held(run_dir: Path) -> Iterator[None]:
    """The lock of ``run_dir`` for the duration of a run (taken earlier or here), released at its end."""
    hold(run_dir)
    try:
        yield
    finally:
        release(run_dir)


def is_free(run_dir: Path) -> bool | None:
    """No other process holds the run dir's lock (this one may); None when that cannot be told: no lock
    file (a run of an rlexp without locks) or a file system that refuses locks."""
    if run_dir.resolve() in _held:
        return True
    try:
        fd = os.open(run_dir / LOCK_FILE, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)  # a shared probe: a reader's lock works on NFS too
    except BlockingIOError:
        return False
    except OSError:
        return None
    finally:
        os.close(fd)  # also releases the probe's lock
    return True


def wait_until_free(run_dir: Path, seconds: float) -> bool:
    """Waits up to ``seconds`` while another process holds the run dir; whether it is free now (or
    cannot be told: no lock file)."""
    deadline = time.monotonic() + seconds
    while is_free(run_dir) is False:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def abandoned(record: RunRecord, run_dir: Path) -> bool:
    """A run that ended without finishing or saving on a signal: its process died (SIGKILL, out of
    memory, node failure, a job killed after its grace time) or a second Ctrl-C aborted it.

    On this machine (same boot id, e.g. another container on it, or same host) the run dir's lock tells
    (rlexp.lifecycle.lock); a run of another machine, or one without a lock file, is judged by its SLURM job or
    process (rlexp.cluster.liveness)."""
    if record.status != RUNNING:
        return record.status == ABORTED
    same_machine = record.boot_id == boot_id() or record.host == socket.gethostname()
    free = is_free(run_dir) if same_machine else None
    if free is not None:
        return free
    return owner_is_gone(record.host, str(record.pid), record.slurm_job_id, int(record.slurm_restart or 0))
