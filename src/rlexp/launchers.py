"""Running jobs elsewhere: the schemas of rlexp's launcher presets (conf/hydra/launcher/), a local
launcher that shares the cores among its jobs, and how many CPU threads a job may use.

Torch's intra-op threads oversubscribe a small machine quickly (measured here: 2 threads per job
under load ran PPO 20-40x slower than 1), so a job uses exactly the CPUs it was given.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, List, Optional

from hydra.core.config_store import ConfigStore
from hydra.core.utils import JobReturn
from hydra_plugins.hydra_submitit_launcher.config import LocalQueueConf, SlurmQueueConf
from hydra_plugins.hydra_submitit_launcher.submitit_launcher import LocalLauncher

# set by LocalParallelLauncher for the jobs it starts: their share of the cores
ENV_JOB_CPUS = "RLEXP_JOB_CPUS"


def usable_cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def job_threads(torch_threads: int | None) -> int:
    """``torch_threads`` if set; else the CPUs this job was given (SLURM's --cpus-per-task, or its share
    of the cores under hydra/launcher=local_parallel); else 1."""
    if torch_threads is not None:
        return torch_threads
    for var in ("SLURM_CPUS_PER_TASK", ENV_JOB_CPUS):
        if os.environ.get(var, "").isdigit() and int(os.environ[var]) > 0:
            return int(os.environ[var])
    return 1


class LocalParallelLauncher(LocalLauncher):
    """Hydra's submitit_local launcher that runs at most ``max_parallel`` jobs at once (default: one
    per usable core) and gives each an equal share of the cores for its torch threads."""

    def __init__(self, max_parallel: int | None = None, **params: Any) -> None:
        super().__init__(**params)
        self.max_parallel = max_parallel or usable_cpus()

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        returns: list[JobReturn] = []
        for start in range(0, len(job_overrides), self.max_parallel):
            chunk = job_overrides[start : start + self.max_parallel]
            # submitit copies this process's environment into each job it starts
            previous = os.environ.get(ENV_JOB_CPUS)
            os.environ[ENV_JOB_CPUS] = str(max(1, usable_cpus() // len(chunk)))
            try:
                returns.extend(super().launch(chunk, initial_job_idx + start))
            finally:
                if previous is None:
                    os.environ.pop(ENV_JOB_CPUS, None)
                else:
                    os.environ[ENV_JOB_CPUS] = previous
        return returns


@dataclass
class SlurmConf(SlurmQueueConf):
    """hydra-submitit-launcher 1.2's SLURM options plus what it lacks and submitit supports."""

    # extra arguments of the `srun` that starts the job inside the allocation, e.g. [--cpu-bind=none]
    srun_args: Optional[List[str]] = None


@dataclass
class LocalParallelConf(LocalQueueConf):
    _target_: str = "rlexp.launchers.LocalParallelLauncher"
    # jobs running at once; null: one per usable core
    max_parallel: Optional[int] = None


def register_launcher_configs() -> None:
    cs = ConfigStore.instance()
    cs.store(group="hydra/launcher", name="slurm_schema", node=SlurmConf, provider="rlexp")
    cs.store(group="hydra/launcher", name="local_parallel_schema", node=LocalParallelConf, provider="rlexp")
