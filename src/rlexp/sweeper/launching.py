"""Trials' jobs started by Hydra's launcher (local processes, SLURM jobs) and their outcomes collected."""

from __future__ import annotations

from collections.abc import Sequence

from hydra.plugins.launcher import Launcher

from rlexp.sweeper.outcomes import JobOutcome


class Jobs:
    """The sweep's launcher, numbering its jobs across batches as Hydra does (``initial_job_idx``)."""

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
