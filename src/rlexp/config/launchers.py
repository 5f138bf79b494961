"""The schemas of rlexp's launcher presets (conf/hydra/launcher/): hydra-submitit-launcher's, with what
rlexp adds."""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional

from hydra.core.config_store import ConfigStore
from hydra_plugins.hydra_submitit_launcher.config import SlurmQueueConf


@dataclass
class SlurmConf(SlurmQueueConf):
    """hydra-submitit-launcher 1.2's SLURM options plus what it lacks and submitit supports."""

    # extra arguments of the `srun` that starts the job inside the allocation, e.g. [--cpu-bind=none]
    srun_args: Optional[List[str]] = None


@dataclass
class LocalParallelConf:
    """rlexp's own local launcher: jobs forked from a server that imported the training path once."""

    _target_: str = "hydra_plugins.rlexp_launcher.launcher.LocalParallelLauncher"
    # jobs running at once; null: one per usable core
    max_parallel: Optional[int] = None
    # wall-clock limit of one job (minutes): then SIGTERM (a run checkpoints and ends, resumable)
    timeout_min: float = 600
    # each job's stdout and stderr: <log_folder>/<pid>_log.out and _log.err (relative: in the sweep dir)
    log_folder: str = ".jobs"


def register_launcher_configs() -> None:
    cs = ConfigStore.instance()
    # at the root, not in hydra/launcher: they are no launcher options of their own
    cs.store(name="hydra_launcher_slurm_schema", node=SlurmConf, provider="rlexp")
    cs.store(name="hydra_launcher_local_parallel_schema", node=LocalParallelConf, provider="rlexp")
