"""Is the process that owns a run or a trial still alive? Asked before resuming a run dir whose run did
not finish, and before requeueing a trial left RUNNING: a live owner must never be doubled."""

from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import Collection, Iterable
from pathlib import Path

# the states of a SLURM job that has ended for good (PREEMPTED is left out: a requeue may follow)
_SLURM_OVER = {"BOOT_FAIL", "CANCELLED", "COMPLETED", "DEADLINE", "FAILED", "NODE_FAIL", "OUT_OF_MEMORY", "TIMEOUT"}


def boot_id() -> str | None:
    """This kernel's boot id: the same for every container on one machine, new after a reboot."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return None


def slurm_restart_count() -> int:
    """How often SLURM has requeued the job this process runs in (0 outside SLURM)."""
    count = os.environ.get("SLURM_RESTART_COUNT", "")
    return int(count) if count.isdigit() else 0


def process_is_gone(host: str, pid: str) -> bool:
    """A process of this host that no longer exists (a process of another host cannot be checked)."""
    if host != socket.gethostname() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def slurm_job_is_over(job: str) -> bool:
    """The SLURM job has ended (or slurmctld has forgotten it); False when squeue cannot tell."""
    return job in slurm_jobs_over([job])


def slurm_jobs_over(jobs: Iterable[str]) -> set[str]:
    """Those of the SLURM jobs that have ended (or that slurmctld has forgotten), asked in one squeue call
    (a sweeper of a large study asks about every running trial's job); none when squeue cannot tell."""
    jobs = sorted(set(jobs))
    if not jobs:
        return set()
    try:
        out = subprocess.run(
            ["squeue", "-h", "-t", "all", "-j", ",".join(jobs), "-o", "%A %T"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired):
        return set()
    if out.returncode != 0:  # every id unknown: forgotten jobs (one id unknown among known ones is no error)
        return set(jobs) if "Invalid job id" in out.stderr else set()
    states = dict(line.split(maxsplit=1) for line in out.stdout.splitlines() if len(line.split()) == 2)
    return {job for job in jobs if job not in states or states[job].strip() in _SLURM_OVER}


def owner_is_gone(
    host: str, pid: str, job: str | None, restart: int = 0, jobs_over: Collection[str] | None = None
) -> bool:
    """The owner (host, pid, SLURM job and its requeue count) has ended: an earlier attempt of this
    very SLURM job, another SLURM job that is over, or a process of this host that has exited.
    ``jobs_over``: the SLURM jobs known to be over (slurm_jobs_over), when asked for many at once."""
    if job and job == os.environ.get("SLURM_JOB_ID"):
        return restart < slurm_restart_count() or process_is_gone(host, pid)
    if job:
        return job in jobs_over if jobs_over is not None else slurm_job_is_over(job)
    return process_is_gone(host, pid)
