"""The machine-readable record of a run (summary.json): what ran, where, with what, and how well."""

from __future__ import annotations

import os
import platform
import socket
import subprocess
from datetime import datetime, timezone
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from rlexp.cluster.liveness import boot_id, slurm_restart_count
from rlexp.run.backends import algo_target, is_sbx

PACKAGES = (
    "rlexp",
    "torch",
    "stable-baselines3",
    "sb3-contrib",
    "gymnasium",
    "hydra-core",
    "omegaconf",
    "numpy",
)
SBX_PACKAGES = ("sbx-rl", "jax", "jaxlib", "flax", "optax")


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def package_versions(more: tuple[str, ...] = ()) -> dict[str, str | None]:
    """The versions of the packages a run depends on, and of ``more``: None where one is not installed."""
    versions: dict[str, str | None] = {"python": platform.python_version()}
    for name in (*PACKAGES, *more):
        try:
            versions[name] = version(name)
        except PackageNotFoundError:
            versions[name] = None
    return versions


def git_commit(path: Path) -> dict[str, Any] | None:
    """Commit (and whether the tree had uncommitted changes) of the git checkout holding ``path``."""

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(path), *args], capture_output=True, text=True, check=True, timeout=10
        ).stdout.strip()

    try:
        return {"commit": git("rev-parse", "HEAD"), "dirty": bool(git("status", "--porcelain"))}
    except (OSError, subprocess.SubprocessError):
        return None


def _rlexp_source_commit() -> dict[str, Any] | None:
    """Only for a source checkout of rlexp (editable install): a wheel inside some repo has none."""
    repo = Path(__file__).resolve().parents[3]
    return git_commit(repo) if (repo / ".git").exists() and (repo / "pyproject.toml").is_file() else None


def provenance(cfg: DictConfig) -> dict[str, Any]:
    """Versions (with sbx's and JAX's under backend=sbx: its zips are pickles of JAX objects), git state of
    rlexp's source and of the working directory, host, process and SLURM job."""
    return {
        "versions": package_versions(SBX_PACKAGES if is_sbx(cfg) else ()),
        "git": {"rlexp": _rlexp_source_commit(), "cwd": git_commit(Path.cwd())},
        "host": socket.gethostname(),
        "boot_id": boot_id(),
        "pid": os.getpid(),
        "slurm_job_id": os.environ.get("SLURM_JOB_ID"),
        "slurm_restart": slurm_restart_count(),
    }


def new_summary(
    cfg: DictConfig, choices: dict[str, Any], run_dir: Path, command: list[str], threads: int, warnings: list[str]
) -> dict[str, Any]:
    """summary.json of a run that starts now (status running); the manager adds steps and scores."""
    return {
        "status": "running",
        "algo": choices.get("algo"),
        "algo_class": algo_target(cfg),
        "backend": "sbx" if is_sbx(cfg) else "sb3",
        "env": choices.get("env"),
        "env_id": cfg.env.id,
        "tuned_file": cfg.tuned_file,
        "tuned_env_id": cfg.tuned_env_id,
        "seed": cfg.seed,
        "torch_threads": threads,
        "n_timesteps": cfg.n_timesteps,
        "trained_agent": cfg.trained_agent,
        "run_dir": str(run_dir.resolve()),
        "start_time": now(),
        "command": command,
        "warnings": warnings,
        **provenance(cfg),
    }


def tuned_note(cfg: DictConfig, choices: dict[str, Any]) -> str:
    """Which tuned file applies, in one line, for the start of a run."""
    if cfg.tuned_file:
        return f"tuned hyperparameters: tuned/{cfg.tuned_file}.yaml (for {cfg.tuned_env_id})"
    if choices.get("tuned") is None:
        return "tuned hyperparameters: off (~tuned); the algorithm's defaults"
    return f"tuned hyperparameters: none for {choices.get('algo')} x {choices.get('env')}; the algorithm's defaults"
