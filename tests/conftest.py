"""Shared helpers: real Hydra composition of the shipped configs, in-process runs and CLI runs."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from forked_rlexp import run_rlexp
from hydra import compose, initialize_config_module
from infra.postgres import Postgres, postgres_bin
from omegaconf import DictConfig, OmegaConf, open_dict

import rlexp.cli  # noqa: F401  (registers the schemas and the sweeper, as the `rlexp` command does)
from rlexp.config.hydra_versions import version_base

# tiny budgets for tests: a few hundred steps, quick evaluations, no TensorBoard/stdout tables
FAST = [
    "n_timesteps=256",
    "callbacks.eval.freq=128",
    "callbacks.eval.n_episodes=1",
    "callbacks.eval.final_episodes=2",
    "logger=csv",
    "logger.verbose=0",
    "curves=false",  # (tests/test_plot.py draws them)
]

# a search small enough for tests: PPO on CartPole, 2 envs, ~1k steps per trial, quick evaluations
SMALL_SEARCH = [
    "hparams=search",
    "algo=ppo",
    "env=cartpole",
    "env.n_envs=2",
    "n_timesteps=1024",
    "algo.n_steps=choice(32,64)",
    "algo.batch_size=64",
    "algo.n_epochs=choice(1,4)",
    "callbacks.eval.n_evaluations=4",
    "callbacks.eval.n_episodes=2",
    "callbacks.eval.final_episodes=3",
]


def compose_cfg(overrides: list[str]) -> tuple[DictConfig, dict[str, Any]]:
    """The experiment config as `rlexp <overrides>` would compose it, and Hydra's group choices."""
    with initialize_config_module(config_module="rlexp.conf", **version_base()):
        cfg = compose("config", overrides=overrides, return_hydra_config=True)
    choices = OmegaConf.to_container(cfg.hydra.runtime.choices)
    with open_dict(cfg):
        del cfg["hydra"]
    return cfg, choices  # type: ignore[return-value]


def train(overrides: list[str], run_dir: Path) -> dict[str, Any]:
    """One real training run in this process, through the front door as the command does; returns its summary.json."""
    from rlexp.run import front_door
    from rlexp.run.manager import run

    cfg, choices = compose_cfg(overrides)
    warnings = front_door.check(cfg, choices, overrides)
    run(cfg, run_dir, choices, ["rlexp", *overrides], warnings)
    return json.loads((run_dir / "summary.json").read_text())


def lazy_runs(tmp_path_factory: pytest.TempPathFactory, runs: dict[str, list[str]], extra: list[str]) -> Any:
    """``run(name)``: the run dir of ``runs[name]`` (+ FAST and ``extra``), trained the first time a test asks."""
    trained: dict[str, Path] = {}

    def run(name: str) -> Path:
        if name not in trained:
            run_dir = tmp_path_factory.mktemp(name)
            train([*FAST, *runs[name], *extra], run_dir)
            trained[name] = run_dir
        return trained[name]

    return run


def stderr_lines(result: subprocess.CompletedProcess) -> list[str]:
    """The non-blank lines a command printed on stderr but its warnings, which go there too (a user error is
    exactly one)."""
    return [line for line in result.stderr.splitlines() if line.strip() and not line.startswith("rlexp: warning: ")]


def wait_for_episodes(
    run_dir: Path, n: int, proc: subprocess.Popen | None = None, timeout: float = 300, log: Path | None = None
) -> None:
    """Until the run has logged n training episodes (it trains, past its start, its signal handlers in
    place); fails at once if ``proc`` ends first, saying the end of ``log``."""
    monitor = run_dir / "monitor" / "train" / "0.monitor.csv"
    deadline = time.time() + timeout
    while not (monitor.is_file() and len(monitor.read_text().splitlines()) >= n + 2):
        if time.time() > deadline or (proc is not None and proc.poll() is not None):
            said = log.read_text()[-2000:] if log is not None and log.is_file() else ""
            raise AssertionError(f"no {n} episodes in {monitor} ({proc.poll() if proc else 'no process'}): {said}")
        time.sleep(0.05)


def rlexp_cli(args: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: int = 300):
    """`python -m rlexp ARGS` as a process of its own (as a user runs it), forked from a server that
    imported rlexp once (tests/forked_rlexp.py)."""
    full_env = {**os.environ, **(env or {})}
    full_env.pop("HYDRA_FULL_ERROR", None) if env is None or "HYDRA_FULL_ERROR" not in env else None
    return run_rlexp(args, cwd, full_env, timeout)


@pytest.fixture(autouse=True)
def _one_torch_thread():
    import torch

    torch.set_num_threads(1)


# tests that start services (PostgreSQL, a SLURM cluster) or install Debian packages do so only in CI
# (CI=true, as .ci/run runs) or when this variable is 1; elsewhere they skip, saying so
SERVICES_OPT_IN = "RLEXP_TEST_SERVICES"


def _may_start_services() -> bool:
    return os.environ.get("CI") == "true" or os.environ.get(SERVICES_OPT_IN) == "1"


def _no_services(what: str) -> None:
    if not _may_start_services():
        pytest.skip(f"{what}: starts services as root; set {SERVICES_OPT_IN}=1 (or CI=true) to let the tests do it")
    if os.geteuid() != 0:
        pytest.fail(f"{what} needs root to start its services")


@pytest.fixture(scope="session")
def postgres() -> Any:
    """The session's PostgreSQL server (one per test worker)."""
    _no_services("PostgreSQL tests")
    pg_bin = postgres_bin()
    if pg_bin is None:
        pytest.fail("PostgreSQL tests need Debian's postgresql package (.ci/run installs it)")
    server = Postgres(pg_bin)
    try:
        yield server
    finally:
        server.remove()


@pytest.fixture(scope="session")
def postgres_url(postgres: Postgres) -> str:
    """The URL of the session's PostgreSQL database for Optuna studies."""
    return postgres.url


INFRA = Path(__file__).parent / "infra"


def _slurm_cluster_name() -> str | None:
    """The name of the SLURM cluster this machine reaches, if one is up."""
    try:
        ping = subprocess.run(["scontrol", "ping"], capture_output=True, text=True, timeout=30)
        if ping.returncode != 0 or "is UP" not in ping.stdout:
            return None
        config = subprocess.run(["scontrol", "show", "config"], capture_output=True, text=True, timeout=30).stdout
    except (FileNotFoundError, subprocess.TimeoutExpired):
        return None
    return next((line.split("=", 1)[1].strip() for line in config.splitlines() if line.startswith("ClusterName")), "?")


@pytest.fixture(scope="session")
def slurm_cluster():
    """A real single-node SLURM cluster (Debian's slurm-wlm and munge; slurmdbd with MariaDB, so that
    sacct works) started by tests/infra/slurm.sh unless one is up; stopped again if this session started it.

    The tests using it share one xdist worker (xdist_group "slurm"): there is one cluster per machine.
    """
    started = False
    name = _slurm_cluster_name()
    if name is not None and name != "rlexp":
        pytest.skip(f"a real SLURM cluster ({name}) is reachable; the tests only submit to their own")
    if name is None:
        _no_services("SLURM tests")
        subprocess.run(["bash", str(INFRA / "slurm.sh"), "start"], check=True, timeout=1200)
        started = True
    try:
        yield
    finally:
        if started:
            subprocess.run(["bash", str(INFRA / "slurm.sh"), "stop"], timeout=300)


@pytest.fixture
def small_tmpfs(tmp_path):
    """A 1 MiB tmpfs mounted in tmp_path (root; only where the tests may change the system, as for services)."""
    _no_services("tests on a small tmpfs")
    mount = tmp_path / "small"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def console_shape(line: str) -> str:
    """A console line without what changes from run to run: numbers, paths, the reference's verdict."""
    line = re.sub(r"(?<![\w.])/[\w./-]+", "<path>", line)
    line = re.sub(r"-?\d[\d,]*(\.\d+)?", "#", line)
    line = re.sub(r"(?<=\S) +", " ", line)  # (columns aligned to the numbers' widths)
    line = re.sub(r"\b(matches|differs)\b", "<parity>", line)  # (an int8 file's agreement, reported only)
    # the verdict: within the reference, lower or higher than all its seeds (rlexp.references.verdict)
    return re.sub(r"^(rlexp: final #: ).*? \(", r"\1<verdict> (", line)


def docs_line(page: str, start: str) -> str:
    """The line of docs/<page> that starts with ``start`` (a console line a guide shows)."""
    text = (Path(__file__).resolve().parents[1] / "docs" / page).read_text()
    (line,) = [line for line in text.splitlines() if line.startswith(start)]
    return line


# the tests that read the built docs site (5-8 s to build) run on one worker, which builds it once
SITE_GROUP = pytest.mark.xdist_group("docs_site")


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`mkdocs build --strict` of docs/ (a warning fails it, with mkdocs' own words)."""
    for plugin in ("mkdocs", "material", "mkdocstrings_handlers.python"):
        pytest.importorskip(plugin)
    out = tmp_path_factory.mktemp("site")
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=Path(__file__).resolve().parents[1],
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return out
