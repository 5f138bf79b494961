"""A signal stops a real run with a resume checkpoint; re-running it in its run dir finishes it exactly."""

from __future__ import annotations

import csv
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from contextlib import suppress
from pathlib import Path

import numpy as np
import pytest
from background import LATE_SIGNAL_ENV, ended, start, wait_for_file
from conftest import FAST, console_shape, docs_line, rlexp_cli, wait_for_episodes


@pytest.mark.parametrize(
    ("algo", "extra", "signum"),
    [
        # rollouts of 8 envs x 32 steps, on gymnasium's NumPy CartPole (env.vec_env=auto)
        ("ppo", ["n_timesteps=12000"], signal.SIGTERM),
        # the other vector envs (rlexp.vecenvs): EnvPool's, and the lean DummyVecEnv
        pytest.param("ppo", ["n_timesteps=12000", "env.vec_env=envpool"], signal.SIGTERM, marks=pytest.mark.slow),
        pytest.param("ppo", ["n_timesteps=12000", "env.vec_env=lean"], signal.SIGTERM, marks=pytest.mark.slow),
        pytest.param(  # replay buffer
            "dqn", ["n_timesteps=16000", "algo.learning_starts=500"], signal.SIGUSR2, marks=pytest.mark.slow
        ),
        pytest.param("a2c", ["n_timesteps=30000"], signal.SIGINT, marks=pytest.mark.slow),  # Ctrl-C
        # env workers in their own processes get the signal too (Ctrl-C, SLURM) and must outlive it
        pytest.param(
            "ppo",
            ["n_timesteps=40000", "env.vec_env=subproc", "env.n_envs=4", "env.normalize=true"],
            signal.SIGINT,
            marks=pytest.mark.slow,  # 3 minutes here
        ),
    ],
)
def test_signal_checkpoints_and_resume_finishes_with_the_requested_steps(algo, extra, signum, tmp_path):
    args = [
        f"algo={algo}",
        "env=cartpole",
        *extra,
        "logger=csv",
        "callbacks.eval.n_evaluations=4",
        "callbacks.eval.n_episodes=2",
        "callbacks.eval.final_episodes=2",
    ]
    run = tmp_path / "run"
    proc = start(tmp_path, args, stderr=subprocess.PIPE)
    # the first of 4 evaluations: a quarter of the steps done, however fast the agent learns
    wait_for_file(run / "evaluations.npz", proc)
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signum, err[-2000:]
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"rlexp: stopped by {signal.Signals(signum).name} at step "), last
    assert "hydra.run.dir=" in last  # how to finish the run
    if signum == signal.SIGTERM:  # the guide's line, but for paths, numbers and the run's own overrides
        shown = docs_line("guides/continue-and-resume.md", "rlexp: stopped by SIGTERM")
        head = "; to finish the run: rlexp "
        assert console_shape(shown.split(head)[0]) == console_shape(last.split(head)[0]) and head in last

    stopped = json.loads((run / "summary.json").read_text())
    assert stopped["status"] == "interrupted"
    assert 0 < stopped["steps_done"] < stopped["target_steps"]
    saved = run / "resume"
    assert zipfile.ZipFile(saved / "model.zip").testzip() is None
    assert (saved / "replay_buffer.pkl").is_file() == (algo == "dqn")
    assert (saved / "vecnormalize.pkl").is_file() == ("env.normalize=true" in extra)
    evaluations_before = (
        list(np.load(run / "evaluations.npz")["timesteps"]) if (run / "evaluations.npz").exists() else []
    )

    # another config in that run dir is refused and changes nothing
    other = rlexp_cli([*args, "seed=1", "hydra.run.dir=run"], cwd=tmp_path)
    assert other.returncode == 1
    assert "holds an interrupted run with another config (differs at seed)" in other.stderr.strip().splitlines()[-1]
    assert json.loads((run / "summary.json").read_text()) == stopped

    resumed = rlexp_cli([*args, "hydra.run.dir=run"], cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    summary = json.loads((run / "summary.json").read_text())
    assert summary["status"] == "completed"
    assert summary["resumed"] == [{"step": stopped["steps_done"], "time": summary["resumed"][0]["time"]}]
    assert not saved.exists()  # the final agent supersedes the checkpoint
    if stopped["best_eval"] is not None:  # the best agent of the first part is not forgotten
        assert summary["best_eval"]["mean"] >= stopped["best_eval"]["mean"]

    # the same total as a run never stopped (SB3 rounds up to whole rollouts either way)
    straight = rlexp_cli([*args, "hydra.run.dir=straight"], cwd=tmp_path)
    assert straight.returncode == 0, straight.stderr[-2000:]
    expected = json.loads((tmp_path / "straight" / "summary.json").read_text())["steps_done"]
    assert summary["steps_done"] == expected >= summary["n_timesteps"]

    # one continuous record: evaluations on the same schedule, logs and monitor files grown, not restarted
    timesteps = list(np.load(run / "evaluations.npz")["timesteps"])
    assert timesteps[: len(evaluations_before)] == evaluations_before
    assert timesteps == list(np.load(tmp_path / "straight" / "evaluations.npz")["timesteps"])
    steps = [int(r["time/total_timesteps"]) for r in csv.DictReader((run / "logs" / "progress.csv").open())]
    assert steps == sorted(steps) and steps[0] < stopped["steps_done"] < steps[-1]
    lines = (run / "monitor" / "train" / "0.monitor.csv").read_text().splitlines()
    assert sum(line.startswith("#") for line in lines) == 1 and lines.count("r,l,t") == 1


def test_a_killed_run_resumes_from_its_newest_checkpoint(tmp_path):
    """SIGKILL leaves no time to save: the run's newest periodic checkpoint is the resume point."""
    args = [
        "algo=ppo",
        "env=cartpole",
        "n_timesteps=12000",
        "logger=csv",
        "callbacks=checkpoints",
        "callbacks.checkpoint.freq=2000",  # not a multiple of the 256-step rollouts
        "callbacks.eval.n_evaluations=3",
        "callbacks.eval.n_episodes=2",
    ]
    run = tmp_path / "run"
    proc = start(tmp_path, args)
    deadline = time.time() + 120
    while len(list((run / "checkpoints").glob("step_*"))) < 2:
        assert time.time() < deadline and proc.poll() is None
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert json.loads((run / "summary.json").read_text())["status"] == "running"
    newest = max(int(d.name.removeprefix("step_")) for d in (run / "checkpoints").glob("step_*"))

    resumed = rlexp_cli([*args, "hydra.run.dir=run"], cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    summary = json.loads((run / "summary.json").read_text())
    assert summary["status"] == "completed" and summary["resumed"][0]["step"] == newest
    assert summary["steps_done"] == math.ceil(12000 / 256) * 256
    steps = [int(r["time/total_timesteps"]) for r in csv.DictReader((run / "logs" / "progress.csv").open())]
    assert steps == sorted(set(steps))  # rows the killed part logged past the checkpoint were dropped
    assert json.loads((run / "best" / "best.json").read_text()) == summary["best_eval"]


def test_a_multirun_run_again_keeps_its_completed_runs(tmp_path):
    args = ["-m", "seed=0,1", *FAST, "hydra.sweep.dir=sweep"]
    assert rlexp_cli(args, cwd=tmp_path).returncode == 0
    before = {p: p.read_bytes() for p in (tmp_path / "sweep").rglob("*") if p.is_file() and ".hydra" not in p.parts}
    again = rlexp_cli(args, cwd=tmp_path)
    assert again.returncode == 0, again.stderr[-2000:]
    assert again.stdout.count("already holds this run, completed") == 2
    after = {p: p.read_bytes() for p in (tmp_path / "sweep").rglob("*") if p.is_file() and ".hydra" not in p.parts}
    bookkeeping = ("multirun.yaml", ".rlexp.lock")  # the lock file names its latest holder
    assert {p: b for p, b in after.items() if p.name not in bookkeeping} == {
        p: b for p, b in before.items() if p.name not in bookkeeping
    }


def test_a_killed_run_without_checkpoints_starts_over_and_keeps_its_files_aside(tmp_path):
    args = ["algo=ppo", "env=cartpole", "n_timesteps=8000", "logger=csv", "callbacks.eval.n_evaluations=2"]
    run = tmp_path / "run"
    proc = start(tmp_path, args)
    wait_for_episodes(run, 5, proc)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    killed = json.loads((run / "summary.json").read_text())
    assert killed["status"] == "running"

    again = rlexp_cli([*args, "hydra.run.dir=run"], cwd=tmp_path)
    assert again.returncode == 0, again.stderr[-2000:]
    summary = json.loads((run / "summary.json").read_text())
    assert summary["status"] == "completed" and "resumed" not in summary
    assert summary["steps_done"] == math.ceil(8000 / 256) * 256
    aside = run / ".abandoned_1"
    assert json.loads((aside / "summary.json").read_text())["start_time"] == killed["start_time"]
    assert (aside / "monitor" / "train" / "0.monitor.csv").is_file()


@pytest.mark.slow
def test_the_printed_hint_finishes_a_run_in_a_dir_with_spaces_and_its_searchpath(tmp_path):
    """The hint and command.txt re-run the run exactly: Hydra-quoted run dir, hydra.searchpath kept."""
    (tmp_path / "conf" / "tuned").mkdir(parents=True)
    (tmp_path / "conf" / "tuned" / "mine.yaml").write_text("# @package _global_\nalgo:\n  n_steps: 64\n")
    run = tmp_path / "my runs" / "essai ü"
    args = [
        "n_timesteps=20000",
        "logger=csv",
        "callbacks.eval.n_evaluations=4",
        "callbacks.eval.n_episodes=2",
        "callbacks.eval.final_episodes=2",
        "tuned=mine",
        f"hydra.searchpath=[file://{tmp_path / 'conf'}]",
        f"hydra.run.dir='{run}'",
    ]
    with ended(
        subprocess.Popen([sys.executable, "-m", "rlexp", *args], cwd=tmp_path, stderr=subprocess.PIPE, text=True)
    ) as proc:
        wait_for_file(run / "evaluations.npz", proc)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGTERM, err[-2000:]
    hint = err.strip().splitlines()[-1].split("; to finish the run: ", 1)[1]
    assert (run / "command.txt").read_text().strip() == hint
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    env.pop("HYDRA_FULL_ERROR", None)
    resumed = subprocess.run(["bash", "-c", hint], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    summary = json.loads((run / "summary.json").read_text())
    assert summary["status"] == "completed" and len(summary["resumed"]) == 1


ENDLESS = """import pathlib

import gymnasium as gym
import numpy as np


class EndlessEnv(gym.Env):
    \"\"\"Evaluation episodes that never end (a good agent, no time limit) until the file ``release`` exists;
    ``marker`` is written at each reset, so that a test knows an evaluation has begun. Training episodes
    (endless=False) last 20 steps.\"\"\"

    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, endless=False, marker=None, release=None):
        self.endless, self.marker, self.release, self.steps = endless, marker, release, 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        if self.marker:
            pathlib.Path(self.marker).write_text("reset")
        self.steps = 0
        return np.zeros(2, np.float32), {}

    def step(self, action):
        self.steps += 1
        if self.endless:
            done = self.release is not None and pathlib.Path(self.release).exists()
        else:
            done = self.steps >= 20
        return np.zeros(2, np.float32), 1.0, done, False, {}
"""


def _endless_eval(tmp_path) -> list[str]:
    """Training episodes of 20 steps; evaluation episodes that run until tmp_path/release exists."""
    (tmp_path / "endless.py").write_text(ENDLESS)
    return [
        "env.id=endless:EndlessEnv",
        "~tuned",
        "+env.eval_kwargs.endless=true",
        f"+env.eval_kwargs.marker={tmp_path / 'evaluating'}",
        f"+env.eval_kwargs.release={tmp_path / 'release'}",
        "random_baseline.episodes=0",  # its episodes on the eval env would never end either
        "logger=csv",
    ]


@pytest.mark.slow  # in CI's slow run
def test_a_stop_signal_abandons_a_periodic_evaluation_that_would_never_end(tmp_path):
    args = [*_endless_eval(tmp_path), "n_timesteps=2048", "algo.n_steps=64", "algo.batch_size=64"]
    args += ["callbacks.eval.freq=512", "callbacks.eval.n_episodes=1", "callbacks.eval.final_episodes=1"]
    args += ["hydra.run.dir=run"]
    with ended(
        subprocess.Popen([sys.executable, "-m", "rlexp", *args], cwd=tmp_path, stderr=subprocess.PIPE, text=True)
    ) as proc:
        wait_for_file(tmp_path / "evaluating", proc)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)  # the endless evaluation is not waited for
    assert proc.returncode == 128 + signal.SIGTERM, err[-2000:]
    stopped = json.loads((tmp_path / "run" / "summary.json").read_text())
    # counted at the start of the rollout the evaluation cut: 512 steps = 8 rollouts of 64
    assert (stopped["status"], stopped["steps_done"]) == ("interrupted", 448)
    (tmp_path / "release").write_text("")  # evaluations end from now on
    resumed = rlexp_cli(args, cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["status"] == "completed" and summary["steps_done"] == 2048
    # the abandoned evaluation ran again on resume, on the same schedule as a run never stopped
    assert list(np.load(tmp_path / "run" / "evaluations.npz")["timesteps"]) == [512, 1024, 1536, 2048]


@pytest.mark.slow  # a two-job multirun stopped and run again: in CI's slow run
def test_a_stop_signal_during_a_multiruns_final_evaluation_ends_the_sweep(tmp_path):
    no_periodic = ["callbacks=none", "callbacks.eval.freq=0"]  # FAST asks for periodic evaluations
    args = ["-m", "seed=0,1", *_endless_eval(tmp_path), *FAST, *no_periodic, "algo.n_steps=64", "algo.batch_size=64"]
    args += ["hydra.sweep.dir=sweep", "curves=true"]
    with ended(
        subprocess.Popen([sys.executable, "-m", "rlexp", *args], cwd=tmp_path, stderr=subprocess.PIPE, text=True)
    ) as proc:
        wait_for_file(tmp_path / "evaluating", proc)  # job 0 saved its agent and began its final evaluation
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGTERM, err[-2000:]
    assert "re-run the same command with hydra.sweep.dir=sweep" in err.strip().splitlines()[-1]
    assert not (tmp_path / "sweep" / "1").exists()  # the next job never started
    # the figure's drawing process ends with the run (a figure it finished before the stop may stay)
    assert not list((tmp_path / "sweep" / "0").glob(".*partial"))
    assert not [cmd for cmd in _command_lines() if "rlexp.figures.curves" in cmd and str(tmp_path) in cmd]
    stopped = json.loads((tmp_path / "sweep" / "0" / "summary.json").read_text())
    assert (stopped["status"], stopped["steps_done"]) == ("interrupted", 256)  # all trained, not evaluated
    (tmp_path / "release").write_text("")
    again = rlexp_cli(args, cwd=tmp_path)  # job 0 only evaluates (nothing left to train), job 1 runs
    assert again.returncode == 0, again.stderr[-2000:]
    for job in ("0", "1"):
        assert json.loads((tmp_path / "sweep" / job / "summary.json").read_text())["status"] == "completed"
        assert (tmp_path / "sweep" / job / "curves.png").is_file()


def _command_lines() -> list[str]:
    """The command lines of this machine's processes."""
    out = []
    for path in Path("/proc").glob("[0-9]*/cmdline"):
        with suppress(OSError):  # ended meanwhile
            out.append(path.read_bytes().replace(b"\0", b" ").decode(errors="replace"))
    return out


@pytest.mark.parametrize("multirun", [pytest.param(False, marks=pytest.mark.slow), True])
def test_a_stop_signal_as_the_run_completes_keeps_it_completed_and_ends_a_sweep(multirun, tmp_path):
    shutil.copy(LATE_SIGNAL_ENV, tmp_path / "late.py")
    args = ["env.id=late:LateSignalEnv", "~tuned", "+env.eval_kwargs.kill_on_close=true", *FAST, "algo.n_steps=32"]
    args.append("random_baseline.episodes=0")  # its env, closed once stepped, would signal before training
    args = ["-m", *args, "seed=0,1", "hydra.sweep.dir=sweep"] if multirun else [*args, "hydra.run.dir=run"]
    result = rlexp_cli(args, cwd=tmp_path)
    run_dir = tmp_path / ("sweep/0" if multirun else "run")
    assert json.loads((run_dir / "summary.json").read_text())["status"] == "completed"
    if not multirun:  # nothing was left to stop
        assert result.returncode == 0, result.stderr[-2000:]
        last = result.stderr.strip().splitlines()[-1]
        assert last == f"rlexp: SIGTERM came as the run in {run_dir} completed; it is complete"
        return
    assert result.returncode == 128 + signal.SIGTERM, result.stderr[-2000:]
    last = result.stderr.strip().splitlines()[-1]
    assert last == (
        f"rlexp: SIGTERM came as the run in {run_dir} completed; to finish the multirun, re-run the same "
        "command with hydra.sweep.dir=sweep"
    )
    assert not (tmp_path / "sweep" / "1").exists()  # the next job never started


# an env module that, imported by the front door's checks, says so and waits: Ctrl-C comes before the run starts
HELD_ENV = """import pathlib, time
pathlib.Path("ready").touch()
while not pathlib.Path("go").exists():
    time.sleep(0.05)
from gymnasium.envs.classic_control import CartPoleEnv as Env
"""


def test_ctrl_c_before_the_run_starts_is_one_line_and_leaves_no_dir(tmp_path):
    (tmp_path / "held_env.py").write_text(HELD_ENV)
    args = [*FAST, "env.id=held_env:Env", "~tuned", "hydra.run.dir=outputs/held/run"]
    # (as from a shell: a test worker may ignore SIGINT, and a child would inherit that)
    proc = subprocess.Popen(
        [sys.executable, "-m", "rlexp", *args],
        cwd=tmp_path,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    with ended(proc):
        wait_for_file(tmp_path / "ready", proc)
        assert (tmp_path / "outputs" / "held" / "run").is_dir()  # (its lock is taken: the checks are running)
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130
    assert stderr.splitlines() == ["rlexp: stopped by Ctrl-C before the run started; nothing was written"]
    assert not (tmp_path / "outputs").exists()
