"""How many CPU threads a job may use (the launcher presets' schemas are in rlexp.config.launchers, the
local_parallel launcher itself in hydra_plugins.rlexp_launcher).

Torch's intra-op threads oversubscribe a small machine quickly (measured here: 2 threads per job
under load ran PPO 20-40x slower than 1), so a job uses exactly the CPUs it was given.
"""

from __future__ import annotations

import os
import sys

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


def passive_waits() -> bool:
    """Torch's OpenMP threads sleep at their barriers instead of spinning (``OMP_WAIT_POLICY=PASSIVE``),
    asked for before torch loads; True when that holds for this process.

    Spinning threads are what make 2 threads run 2-5x slower than 1 when another process is busy (PPO on
    Pong with EnvPool, measured here); sleeping ones keep that case as fast as one thread. OpenMP reads the
    variable once, when torch loads, so a process that loaded torch without it keeps spinning (False), and
    a user's own value wins."""
    if "torch" not in sys.modules:
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    return os.environ.get("OMP_WAIT_POLICY", "").upper() == "PASSIVE"


def cnn_on_envpool(vec_env: str, policy: str) -> bool:
    """A CNN policy whose envs EnvPool steps: the case where torch may take turns with EnvPool's pool on
    every CPU (``job_threads``). (``vec_env``: the config's value, a str enum.)"""
    return vec_env == "envpool" and "Cnn" in policy


def job_threads(torch_threads: int | None, turns_with_envpool: bool = False) -> int:
    """``torch_threads`` if set; else the CPUs this job was given (its share of the cores under
    hydra/launcher=local_parallel, which may itself run inside a SLURM allocation; SLURM's
    --cpus-per-task); else 1, or, for a CNN policy whose envs EnvPool steps, the CPUs this process may
    run on where torch's threads wait passively (``passive_waits``).

    EnvPool's thread pool already takes those CPUs, and its threads and torch's take turns (the pool steps
    while the policy waits for the observations, and sleeps while it learns): PPO on Pong, 8 envs, ran
    1.35x faster on 2 sleeping threads than on 1 here, and as fast as 1 with another process busy. A small
    MLP gains nothing from a second thread and sleeping ones run it 2x slower, so it keeps one."""
    if torch_threads is not None:
        return torch_threads
    for var in (ENV_JOB_CPUS, "SLURM_CPUS_PER_TASK"):
        if os.environ.get(var, "").isdigit() and int(os.environ[var]) > 0:
            return int(os.environ[var])
    return usable_cpus() if turns_with_envpool and passive_waits() else 1
