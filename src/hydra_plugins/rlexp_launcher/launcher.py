"""`hydra/launcher=local_parallel`: several jobs at once on this machine, the cores shared out among them,
each a process of its own forked from a server that imported rlexp's training path once
(rlexp.cluster.forked_jobs)."""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, filter_overrides, run_job, setup_globals
from hydra.plugins.launcher import Launcher
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig, open_dict

from rlexp.cluster.cpus import ENV_JOB_CPUS, usable_cpus
from rlexp.cluster.forked_jobs import ForkedJobs, stop_signals_raise

log = logging.getLogger(__name__)


class _Job:
    """One job as its process runs it (as Hydra's launchers run a job: the sweep's config with its overrides).
    (A plain class: Hydra's plugin scan loads this module outside sys.modules, where a dataclass fails.)"""

    def __init__(
        self,
        hydra_context: HydraContext,
        task_function: TaskFunction,
        config: DictConfig,
        overrides: list[str],
        number: int,
        singletons: dict[Any, Any],
    ) -> None:
        self.hydra_context, self.task_function, self.config = hydra_context, task_function, config
        self.overrides, self.number, self.singletons = overrides, number, singletons

    def __call__(self) -> JobReturn:
        Singleton.set_state(self.singletons)
        setup_globals()
        config = self.hydra_context.config_loader.load_sweep_config(self.config, self.overrides)
        with open_dict(config.hydra.job):
            config.hydra.job.id = str(os.getpid())
            config.hydra.job.num = self.number
        return run_job(
            hydra_context=self.hydra_context,
            task_function=self.task_function,
            config=config,
            job_dir_key="hydra.sweep.dir",
            job_subdir_key="hydra.sweep.subdir",
        )


class LocalParallelLauncher(Launcher):
    """At most ``max_parallel`` jobs at once (default: one per usable core), each given an equal share of
    the cores for its torch threads; a job past ``timeout_min`` is sent SIGTERM."""

    def __init__(self, max_parallel: int | None = None, timeout_min: float = 600, log_folder: str = ".jobs") -> None:
        self.max_parallel = max_parallel or usable_cpus()
        self.timeout_s = 60 * timeout_min
        self.log_folder = Path(log_folder)
        self.at_once: int | None = None  # a steady search's jobs running at once
        self.jobs = ForkedJobs()
        self.hydra_context: HydraContext | None = None
        self.task_function: TaskFunction | None = None
        self.config: DictConfig | None = None

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        self.hydra_context, self.task_function, self.config = hydra_context, task_function, config

    def set_jobs_at_once(self, jobs: int) -> int:
        """A steady-state search launches its jobs one by one from several threads and keeps ``jobs``
        running: each gets its share of the cores for that many; returns how many run at once (at most
        ``max_parallel``)."""
        self.at_once = max(1, min(jobs, self.max_parallel))
        return self.at_once

    def stop_jobs(self, signum: int) -> None:
        """The running jobs sent ``signum`` (a search stopped by a signal hands their trials over)."""
        self.jobs.stop(signum)

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        assert self.hydra_context is not None and self.task_function is not None and self.config is not None
        sweep_dir = Path(str(self.config.hydra.sweep.dir))
        sweep_dir.mkdir(parents=True, exist_ok=True)
        if "mode" in self.config.hydra.sweep:
            os.chmod(sweep_dir, mode=int(str(self.config.hydra.sweep.mode), 8))
        at_once = self.at_once or min(len(job_overrides), self.max_parallel)
        env = {**os.environ, ENV_JOB_CPUS: str(max(1, usable_cpus() // at_once))}
        jobs, names = [], []
        for number, overrides in enumerate(job_overrides, start=initial_job_idx):
            log.info("\t#%d : %s", number, " ".join(filter_overrides(overrides)))
            singletons = Singleton.get_state()
            jobs.append(_Job(self.hydra_context, self.task_function, self.config, list(overrides), number, singletons))
            names.append(f"job #{number}")
        logs = self.log_folder if self.log_folder.is_absolute() else sweep_dir / self.log_folder
        with stop_signals_raise():
            return self.jobs.run_all(jobs, at_once, env=env, logs=logs, timeout_s=self.timeout_s, names=names)
