"""`hydra/launcher=local_parallel`: submitit's local launcher with the cores shared out among the jobs."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from hydra.core.utils import JobReturn
from hydra_plugins.hydra_submitit_launcher.submitit_launcher import LocalLauncher

from rlexp.cluster.cpus import ENV_JOB_CPUS, usable_cpus


class LocalParallelLauncher(LocalLauncher):
    """Hydra's submitit_local launcher that runs at most ``max_parallel`` jobs at once (default: one
    per usable core) and gives each an equal share of the cores for its torch threads."""

    def __init__(self, max_parallel: int | None = None, **params: Any) -> None:
        super().__init__(**params)
        self.max_parallel = max_parallel or usable_cpus()
        self.steady = False

    def set_jobs_at_once(self, jobs: int) -> int:
        """A steady-state search launches its jobs one by one from several threads and keeps ``jobs`` running:
        each gets its share of the cores for that many, set once here (the threads then leave the
        environment alone); returns how many it runs at once (at most ``max_parallel``)."""
        at_once = max(1, min(jobs, self.max_parallel))
        os.environ[ENV_JOB_CPUS] = str(max(1, usable_cpus() // at_once))
        self.steady = True
        return at_once

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        if self.steady:
            return super().launch(job_overrides, initial_job_idx)
        returns: list[JobReturn] = []
        failure: Exception | None = None
        for start in range(0, len(job_overrides), self.max_parallel):
            chunk = job_overrides[start : start + self.max_parallel]
            # submitit copies this process's environment into each job it starts
            previous = os.environ.get(ENV_JOB_CPUS)
            os.environ[ENV_JOB_CPUS] = str(max(1, usable_cpus() // len(chunk)))
            try:
                returns.extend(super().launch(chunk, initial_job_idx + start))
            except Exception as err:  # a job died without a result: the later batches still run
                failure = failure or err
            finally:
                if previous is None:
                    os.environ.pop(ENV_JOB_CPUS, None)
                else:
                    os.environ[ENV_JOB_CPUS] = previous
        if failure is not None:
            raise failure
        return returns
