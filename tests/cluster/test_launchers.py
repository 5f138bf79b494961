"""Launcher presets compose; local parallel jobs share the cores; a job's torch threads follow its CPUs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FAST, compose_cfg, rlexp_cli
from hydra import compose, initialize_config_module

from rlexp.cluster.cpus import ENV_JOB_CPUS, job_threads, usable_cpus
from rlexp.config.hydra_versions import version_base
from rlexp.config.overrides import as_override


@pytest.mark.parametrize(
    ("preset", "target", "expected"),
    [
        ("slurm_cpu", "SlurmLauncher", {"cpus_per_task": 2, "gpus_per_node": None, "max_num_timeout": 5}),
        ("slurm_gpu", "SlurmLauncher", {"cpus_per_task": 4, "gpus_per_node": 1, "signal_delay_s": 120}),
        ("local_parallel", "LocalParallelLauncher", {"max_parallel": None, "log_folder": ".jobs"}),
    ],
)
def test_launcher_presets_compose(preset, target, expected):
    with initialize_config_module(config_module="rlexp.conf", **version_base()):
        cfg = compose("config", overrides=[f"hydra/launcher={preset}"], return_hydra_config=True)
    launcher = cfg.hydra.launcher
    assert launcher._target_.endswith(target)
    assert {k: launcher[k] for k in expected} == expected
    if preset != "local_parallel":  # (rlexp's own: its jobs' output in the sweep dir's .jobs/)
        assert launcher.submitit_folder == f"{cfg.hydra.sweep.dir}/.submitit/%j"


def test_srun_args_and_sbatch_options_are_knobs():
    overrides = [
        "hydra/launcher=slurm_cpu",
        "hydra.launcher.srun_args=['--cpu-bind=none']",
        "+hydra.launcher.additional_parameters.mail-type=END",
        "hydra.launcher.setup=['module load python']",
    ]
    with initialize_config_module(config_module="rlexp.conf", **version_base()):
        cfg = compose("config", overrides=overrides, return_hydra_config=True)
    assert list(cfg.hydra.launcher.srun_args) == ["--cpu-bind=none"]
    assert cfg.hydra.launcher.additional_parameters == {"mail-type": "END"}
    assert list(cfg.hydra.launcher.setup) == ["module load python"]


def test_job_threads_follow_the_cpus_given(monkeypatch):
    monkeypatch.delenv("SLURM_CPUS_PER_TASK", raising=False)
    monkeypatch.delenv(ENV_JOB_CPUS, raising=False)
    assert job_threads(None) == 1
    # a CNN on EnvPool takes every CPU where torch's threads sleep at their barriers; this process loaded
    # torch spinning, so it keeps one
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    assert job_threads(None, turns_with_envpool=True) == 1
    monkeypatch.setenv("OMP_WAIT_POLICY", "passive")
    assert job_threads(None, turns_with_envpool=True) == usable_cpus()
    monkeypatch.setenv("SLURM_CPUS_PER_TASK", "3")
    assert job_threads(None) == 3
    assert job_threads(None, turns_with_envpool=True) == 3  # a job's CPUs still bound it
    monkeypatch.setenv(ENV_JOB_CPUS, "2")  # local_parallel's share, even inside a SLURM allocation
    assert job_threads(None) == 2
    assert job_threads(4) == 4  # an explicit torch_threads wins
    cfg, _ = compose_cfg([])
    assert cfg.torch_threads is None


@pytest.mark.slow  # parallel jobs, about a minute: in CI's slow run
def test_local_parallel_runs_jobs_at_once_and_shares_the_cores(tmp_path):
    cpus = usable_cpus()
    seeds = list(range(cpus + 1))  # `cpus` jobs at once, then one more as soon as a slot is free
    barrier = [
        "+callbacks.extra.barrier._target_=barrier_callback.Barrier",
        as_override("+callbacks.extra.barrier.dir", str(tmp_path / "started")),
        f"+callbacks.extra.barrier.parties={cpus}",
    ]
    args = ["-m", "hydra/launcher=local_parallel", f"seed={','.join(map(str, seeds))}", *FAST, *barrier]
    tests = str(Path(__file__).parents[1])  # barrier_callback, for the jobs' processes
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [tests, os.environ.get("PYTHONPATH")]))}
    result = rlexp_cli([*args, "hydra.sweep.dir=sweep"], cwd=tmp_path, env=env, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]  # (the first batch got past the barrier together)
    summaries = [json.loads((tmp_path / "sweep" / str(k) / "summary.json").read_text()) for k in seeds]
    assert all(s["status"] == "completed" for s in summaries)
    assert [s["torch_threads"] for s in summaries] == [1] * len(seeds)  # (a share of the cores for `cpus` jobs)
    assert len({s["pid"] for s in summaries}) == len(seeds)  # each job its own process
    logs = sorted(p.name for p in (tmp_path / "sweep" / ".jobs").iterdir())  # its output kept, by process id
    assert logs == sorted(f"{s['pid']}_log.{kind}" for s in summaries for kind in ("err", "out"))


def test_hydra_finds_rlexp_plugins_where_a_wheel_puts_them(tmp_path):
    """Hydra's plugin scan runs each module of hydra_plugins/ before it is in sys.modules, as it finds them in
    a wheel's site-packages (an editable install hides them from the scan): SLURM and submitit jobs scan
    before anything imports rlexp's plugins."""
    src = Path(__file__).parents[2] / "src"
    scan = (
        "from hydra.core.plugins import Plugins\n"
        "from hydra.plugins.launcher import Launcher\n"
        "from hydra.plugins.sweeper import Sweeper\n"
        "print(sorted(p.__name__ for kind in (Launcher, Sweeper) for p in Plugins.instance().discover(kind)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", scan],
        env={**os.environ, "PYTHONPATH": str(src)},
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "LocalParallelLauncher" in done.stdout and "OptunaSweeper" in done.stdout, done.stdout
