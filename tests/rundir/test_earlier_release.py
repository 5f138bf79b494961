"""A run saved by an earlier release (tests/rundir/earlier_release/run: PPO CartPole, 128 steps, a cosine
learning rate, checkpoints every 64 steps, saved before rlexp.build was renamed rlexp.builders): its config.yaml
and every model zip name ``rlexp.build.schedules``, a module that no longer exists. It still evaluates, its
agent trains on, and a copy of it that died at step 64 resumes by its own command."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SAVED = Path(__file__).parent / "earlier_release" / "run"
# the command that made it (command.txt), less its hydra.run.dir
OVERRIDES = [
    "n_timesteps=128",
    "algo.n_steps=32",
    "env.n_envs=2",
    "schedule@lr_schedule=cosine",
    "callbacks=checkpoints",
    "callbacks.checkpoint.freq=64",
    "+algo.policy_kwargs={net_arch:[8]}",
]


def _rlexp(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rlexp", *args], cwd=cwd, capture_output=True, text=True)


@pytest.fixture
def saved(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    shutil.copytree(SAVED, run)
    assert b"rlexp.build.schedules" in (run / "config.yaml").read_bytes()
    assert b"rlexp.build.schedules" in (run / "model.zip").read_bytes()  # (in its data entry's pickles)
    return run


def test_a_run_of_an_earlier_release_evaluates(saved, tmp_path):
    done = _rlexp("evaluate", str(saved), "--episodes", "2", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "mean" in done.stdout


def test_its_agent_trains_on(saved, tmp_path):
    done = _rlexp(*OVERRIDES[:-3], "n_timesteps=64", f"trained_agent={saved}", "hydra.run.dir=more", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    summary = json.loads((tmp_path / "more" / "summary.json").read_text())
    assert summary["status"] == "completed" and summary["trained_agent"] == str(saved)


def test_a_dead_copy_resumes_from_its_checkpoint_by_its_own_command(saved, tmp_path):
    """The run as if killed at step 64: its newest checkpoint is step 64, no final model, status running.
    Its own command (the config compares equal to today's, target names and all) continues it to 128."""
    shutil.rmtree(saved / "checkpoints" / "step_000000000128")
    (saved / "model.zip").unlink()
    summary = json.loads((saved / "summary.json").read_text())
    (saved / "summary.json").write_text(json.dumps({**summary, "status": "running"}))
    done = _rlexp(*OVERRIDES, f"hydra.run.dir={saved}", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"resuming the run in {saved} from step 64" in done.stdout, done.stdout[-2000:]
    summary = json.loads((saved / "summary.json").read_text())  # (the copy's: it records itself where it is)
    assert summary["status"] == "completed" and summary["steps_done"] == 128 and (saved / "model.zip").is_file()
