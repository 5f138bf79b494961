"""How many CPU threads a job may use (the launcher presets' schemas are in rlexp.config.launchers, the
local_parallel launcher itself in hydra_plugins.rlexp_launcher).

Torch's intra-op threads oversubscribe a small machine quickly (measured here: 2 threads per job
under load ran PPO 20-40x slower than 1), so a job uses exactly the CPUs it was given.
"""

from __future__ import annotations

import os

# set by LocalParallelLauncher for the jobs it starts: their share of the cores
ENV_JOB_CPUS = "RLEXP_JOB_CPUS"


def usable_cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def job_cpus() -> int:
    """The CPUs this job was given (hydra/launcher=local_parallel's share, SLURM's --cpus-per-task), else
    the CPUs this process may run on: what a pool of worker threads (EnvPool's) may use."""
    for var in (ENV_JOB_CPUS, "SLURM_CPUS_PER_TASK"):
        if os.environ.get(var, "").isdigit() and int(os.environ[var]) > 0:
            return int(os.environ[var])
    return usable_cpus()


def job_threads(torch_threads: int | None) -> int:
    """``torch_threads`` if set; else the CPUs this job was given (its share of the cores under
    hydra/launcher=local_parallel, which may itself run inside a SLURM allocation; SLURM's
    --cpus-per-task); else 1."""
    if torch_threads is not None:
        return torch_threads
    for var in (ENV_JOB_CPUS, "SLURM_CPUS_PER_TASK"):
        if os.environ.get(var, "").isdigit() and int(os.environ[var]) > 0:
            return int(os.environ[var])
    return 1
