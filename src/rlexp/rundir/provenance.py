"""Where and with what a run ran (summary.json's provenance): package versions, git state, host, process,
SLURM job."""

from __future__ import annotations

import copy
import functools
import os
import platform
import socket
import subprocess
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from rlexp.cluster.liveness import boot_id, slurm_restart_count

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
    return datetime.now(UTC).isoformat(timespec="seconds")


def package_versions(more: tuple[str, ...] = ()) -> dict[str, str | None]:
    """The versions of the packages a run depends on, and of ``more``: None where one is not installed."""
    return dict(_versions(more))


@functools.cache  # (looked up once a process: the packages it runs were loaded when it started)
def _versions(more: tuple[str, ...]) -> dict[str, str | None]:
    versions: dict[str, str | None] = {"python": platform.python_version()}
    for name in (*PACKAGES, *more):
        try:
            versions[name] = version(name)
        except PackageNotFoundError:
            versions[name] = None
    return versions


def git_commit(path: Path) -> dict[str, Any] | None:
    """Commit (and whether the tree had uncommitted changes) of the git checkout holding ``path``, from one
    ``git status`` (None: no checkout, or one without a commit)."""
    try:
        lines = subprocess.run(
            ["git", "-C", str(path), "status", "--porcelain=v2", "--branch"],
            capture_output=True,
            text=True,
            check=True,
            timeout=10,
        ).stdout.splitlines()
    except (OSError, subprocess.SubprocessError):
        return None
    commit = next((line.split(" ", 2)[2] for line in lines if line.startswith("# branch.oid ")), "(initial)")
    if commit == "(initial)":
        return None
    return {"commit": commit, "dirty": any(not line.startswith("#") for line in lines)}  # (# lines: the header)


@functools.cache  # (once a process: the source it runs was loaded when it started)
def _rlexp_source_commit() -> dict[str, Any] | None:
    """Only for a source checkout of rlexp (editable install): a wheel inside some repo has none."""
    repo = Path(__file__).resolve().parents[3]
    return git_commit(repo) if (repo / ".git").exists() and (repo / "pyproject.toml").is_file() else None


def provenance(sbx: bool) -> dict[str, Any]:
    """Versions (with sbx's and JAX's under backend=sbx, ``sbx``: its zips are pickles of JAX objects), git
    state of rlexp's source and of the working directory, host, process and SLURM job. The versions and
    rlexp's source are looked up once a process (a search's trials in its sweeper's process: once), the
    working directory at each call."""
    return {
        "versions": package_versions(SBX_PACKAGES if sbx else ()),
        "git": {"rlexp": copy.copy(_rlexp_source_commit()), "cwd": git_commit(Path.cwd())},
        "host": socket.gethostname(),
        "boot_id": boot_id(),
        "pid": os.getpid(),
        "slurm_job_id": os.environ.get("SLURM_JOB_ID"),
        "slurm_restart": slurm_restart_count(),
    }
