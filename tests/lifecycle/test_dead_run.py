"""A run killed without warning (SIGKILL) is called dead wherever its status shows, and the same command run
again names it and the one command that continues it, which does continue it from its checkpoint."""

from __future__ import annotations

import json
import shlex
import signal
import subprocess
import sys
import time

import pytest
from background import ended
from conftest import compose_cfg, rlexp_cli, stderr_lines

import rlexp
from rlexp.config.plain import plain_dict
from rlexp.lifecycle.state import unfinished_before

# the default run dir (outputs/ppo-cartpole/<time>), as a user's plain command: no hydra.run.dir
ARGS = [
    "algo=ppo",
    "env=cartpole",
    "n_timesteps=4096",
    "callbacks=checkpoints",
    "callbacks.checkpoint.freq=512",
    "callbacks.eval.n_evaluations=2",
    "callbacks.eval.n_episodes=2",
    "callbacks.eval.final_episodes=2",
    "random_baseline.episodes=2",
    "logger=csv",
    "curves=false",
]


@pytest.mark.slow
def test_a_killed_run_is_called_dead_and_the_same_command_names_it_and_how_it_continues(tmp_path):
    folder = tmp_path / "outputs" / "ppo-cartpole"
    proc = subprocess.Popen([sys.executable, "-m", "rlexp", *ARGS], cwd=tmp_path, stdout=subprocess.DEVNULL)
    with ended(proc):
        deadline = time.time() + 300
        while not list(folder.glob("*/checkpoints/step_*")):  # (swapped in whole: an intact checkpoint)
            assert time.time() < deadline and proc.poll() is None, proc.poll()
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    (dead,) = [d for d in folder.iterdir() if not d.is_symlink()]
    step = max(int(d.name.removeprefix("step_")) for d in (dead / "checkpoints").glob("step_*"))
    command = (dead / "command.txt").read_text().strip()
    assert json.loads((dead / "summary.json").read_text())["status"] == "running"  # (it could not say more)

    # the Python API, verify and evaluate call it dead, with the command that continues it
    run = rlexp.load_run(folder / "latest")
    assert run.status == run.summary["status"] == "died"
    assert run.continue_command == command == f"rlexp {shlex.join(ARGS)} hydra.run.dir={dead}"
    how = f"the run died before it finished (newest checkpoint: step {step:,}); to continue it from there: {command}"
    verified = rlexp_cli(["verify", "outputs/ppo-cartpole/latest"], tmp_path)
    assert verified.returncode == 0 and f"  status: died; {how}" in verified.stdout.splitlines(), verified.stdout
    evaluated = rlexp_cli(["evaluate", "outputs/ppo-cartpole/latest"], tmp_path)
    (line,) = stderr_lines(evaluated)
    assert evaluated.returncode == 1 and line.endswith(f"does not exist (this run has: step_{step}); {how}"), line
    continued_agent = rlexp_cli(["trained_agent=outputs/ppo-cartpole/latest", "n_timesteps=256"], tmp_path)
    relative = dead.relative_to(tmp_path)
    assert stderr_lines(continued_agent) == [f"rlexp: error: trained_agent={relative}: no final agent: {how}"]
    assert sorted(folder.iterdir()) == [dead, folder / "latest"]  # (nothing written)

    # the same command starts a new run, first saying which run died, at which step, and what continues it
    again = rlexp_cli(ARGS, tmp_path)
    assert again.returncode == 0, again.stderr[-2000:]
    assert again.stderr.splitlines()[0] == (
        f"rlexp: warning: the last run of this config, {dead}, died before it finished (newest checkpoint: step "
        f"{step:,}); this command starts a new run; to continue that one from step {step:,} instead: {command}"
    )
    (new,) = [d for d in folder.iterdir() if not d.is_symlink() and d != dead]
    assert json.loads((new / "summary.json").read_text())["status"] == "completed"
    # a run of this config starting now says nothing: the last run of it completed (its start, in-process)
    cfg, _ = compose_cfg(ARGS)
    for start, left in ((f"{dead.name}_", dead), ("9999-12-31_00-00-00-000000", None)):  # (after dead; after new)
        (folder / start).mkdir()
        (folder / "latest").unlink()
        (folder / "latest").symlink_to(start)
        assert getattr(unfinished_before(plain_dict(cfg), folder / start), "run_dir", None) == left
        (folder / start).rmdir()

    # the printed command continues the dead run in its dir, from that checkpoint, to the same total
    continued = rlexp_cli(shlex.split(command)[1:], tmp_path)
    assert continued.returncode == 0, continued.stderr[-2000:]
    summary = json.loads((dead / "summary.json").read_text())
    assert summary["status"] == "completed" and [r["step"] for r in summary["resumed"]] == [step]
    assert summary["steps_done"] == json.loads((new / "summary.json").read_text())["steps_done"]
    assert rlexp.load_run(dead).status == "completed" and rlexp.load_run(dead).continue_command is None
