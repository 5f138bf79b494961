"""Trials' jobs started by Hydra's launcher (local processes, SLURM jobs) and their outcomes collected: a batch
at a time, or each job on its own so that a search refills a slot as soon as its trial ends."""

from __future__ import annotations

import signal
import threading
from collections.abc import Sequence
from concurrent.futures import Future

from hydra.plugins.launcher import Launcher

from rlexp.sweeper.outcomes import JobOutcome

# launchers whose jobs run in processes of their own, by module and class name
_APART = {
    ("hydra_plugins.hydra_submitit_launcher.submitit_launcher", "BaseSubmititLauncher"),
    ("hydra_plugins.rlexp_launcher.launcher", "LocalParallelLauncher"),
}


def runs_jobs_apart(launcher: Launcher) -> bool:
    """Whether the launcher's jobs run in processes of their own (submitit's local and SLURM launchers,
    rlexp's local_parallel): jobs launched one by one then run side by side. Hydra's in-process launcher
    runs a job in the sweeper's own process, one at a time. (By name: Hydra's plugin discovery may load a
    plugin's module a second time, so its class objects are not always the ones an import gives.)"""
    return any((cls.__module__, cls.__qualname__) in _APART for cls in type(launcher).__mro__)


class Jobs:
    """The sweep's launcher, numbering its jobs across launches as Hydra does (``initial_job_idx``)."""

    def __init__(self, launcher: Launcher) -> None:
        self.launcher = launcher
        self.launched = 0  # jobs started so far: the next one's index

    def run(self, batch: Sequence[Sequence[str]]) -> list[JobOutcome]:
        """Each job's outcome, once every job of the batch ended (Hydra's launchers start a batch and wait
        for all of it); whatever the launcher raises propagates, the batch counted as launched."""
        try:
            returns = self.launcher.launch(batch, initial_job_idx=self.launched)
        finally:
            self.launched += len(batch)
        return [JobOutcome.of(job) for job in returns]

    def start(self, overrides: Sequence[str]) -> Future[JobOutcome]:
        """One job launched on its own (a batch of one, waited for in a thread of this process): its
        outcome, or what the launcher raised, once it ends. The thread is a daemon: a sweeper stopped by a
        signal hands the job's trial over and exits without waiting for it (rlexp.sweeper.loop)."""
        ended: Future[JobOutcome] = Future()
        index = self.launched
        self.launched += 1

        def wait() -> None:
            try:
                (job,) = self.launcher.launch([overrides], initial_job_idx=index)
                ended.set_result(JobOutcome.of(job))
            except BaseException as err:  # (told as the trial's failure, as a batch's error is)
                ended.set_exception(err)

        threading.Thread(target=wait, name=f"rlexp-job-{index}", daemon=True).start()
        return ended

    def stop(self) -> None:
        """The jobs still running sent SIGTERM, where the launcher can reach them (local_parallel's: they
        checkpoint and end); a search stopped by a signal hands their trials over."""
        stop_jobs = getattr(self.launcher, "stop_jobs", None)
        if stop_jobs is not None:
            stop_jobs(signal.SIGTERM)
