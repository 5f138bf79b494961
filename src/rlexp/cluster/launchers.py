"""Running jobs elsewhere: the schemas of rlexp's launcher presets (conf/hydra/launcher/) and how
many CPU threads a job may use (the local_parallel launcher itself is in hydra_plugins.rlexp_launcher).

Torch's intra-op threads oversubscribe a small machine quickly (measured here: 2 threads per job
under load ran PPO 20-40x slower than 1), so a job uses exactly the CPUs it was given.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import List, Optional

from hydra.core.config_store import ConfigStore
from hydra_plugins.hydra_submitit_launcher.config import LocalQueueConf, SlurmQueueConf

# set by LocalParallelLauncher for the jobs it starts: their share of the cores
ENV_JOB_CPUS = "RLEXP_JOB_CPUS"


def usable_cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


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


@dataclass
class SlurmConf(SlurmQueueConf):
    """hydra-submitit-launcher 1.2's SLURM options plus what it lacks and submitit supports."""

    # extra arguments of the `srun` that starts the job inside the allocation, e.g. [--cpu-bind=none]
    srun_args: Optional[List[str]] = None


@dataclass
class LocalParallelConf(LocalQueueConf):
    _target_: str = "hydra_plugins.rlexp_launcher.launcher.LocalParallelLauncher"
    # jobs running at once; null: one per usable core
    max_parallel: Optional[int] = None


def register_launcher_configs() -> None:
    cs = ConfigStore.instance()
    # at the root, not in hydra/launcher: they are no launcher options of their own
    cs.store(name="hydra_launcher_slurm_schema", node=SlurmConf, provider="rlexp")
    cs.store(name="hydra_launcher_local_parallel_schema", node=LocalParallelConf, provider="rlexp")
