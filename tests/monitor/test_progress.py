"""What a run prints: one line per periodic evaluation when stdout is not a terminal, SB3's tables only
with logger.verbose=2 (the CSV log keeps every scalar either way)."""

from __future__ import annotations

import csv
import json
import os
import re
import struct
import subprocess
import sys

import numpy as np
import pytest
from conftest import rlexp_cli

# PPO CartPole's 8 envs x algo.n_steps=128: whole rollouts of 1,024 steps, so n_timesteps=1500 trains 2,048
RUN = ["n_timesteps=1500", "algo.n_steps=128", "callbacks.eval.n_evaluations=2", "callbacks.eval.n_episodes=2"]
RUN += ["logger=csv", "callbacks.eval.final_episodes=2", "hydra.run.dir=run"]
TRUE_STEPS = (
    "n_timesteps=1,500 trains 2,048 steps: learn() collects whole rollouts of 1,024 steps "
    "(algo.n_steps=128 x env.n_envs=8), as in RL Zoo; its learning-rate and clip-range schedules go below 0 past "
    "n_timesteps (a multiple of 1,024 steps avoids it)"  # (the zoo's linear schedules count to n_timesteps)
)


def test_a_run_prints_a_line_per_evaluation_and_no_tables(tmp_path):
    result = rlexp_cli(RUN, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    lines = result.stdout.strip().splitlines()
    progress = [line for line in lines if line.startswith("rlexp: step ")]
    pattern = r"rlexp: step (1,024|2,048)/2,048 \((50|100)%\) eval -?\d+\.\d\d \+/- \d+\.\d\d, best -?\d+\.\d\d \| "
    assert len(progress) == 2 and all(re.match(pattern + r"[\d,]+ steps/s, ETA \d+:\d\d:\d\d$", p) for p in progress)
    assert lines[-1].startswith("rlexp: run saved to ")
    assert not any(line.startswith("|") for line in lines)  # no SB3 table
    rows = list(csv.DictReader((tmp_path / "run" / "logs" / "progress.csv").open()))
    assert rows and "train/loss" in rows[-1]
    # the steps it trains: whole rollouts, said before training (a warning: 37% past n_timesteps) and recorded;
    # its progress and its evaluations count to them
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["target_steps"] == summary["steps_done"] == 2048 and TRUE_STEPS in summary["warnings"]
    assert f"rlexp: warning: {TRUE_STEPS}" in result.stderr.splitlines()
    assert np.load(tmp_path / "run" / "evaluations.npz")["timesteps"].tolist() == [1024, 2048]
    # RUN/rlexp.log holds what the console showed, in order: the warning before the first step of training
    log = (tmp_path / "run" / "rlexp.log").read_text().splitlines()
    first_step = next(i for i, line in enumerate(log) if " - step " in line)
    assert any(TRUE_STEPS in line for line in log[:first_step]) and "run saved to" in log[-1]


def test_verbose_2_adds_sb3s_tables(tmp_path):
    result = rlexp_cli([*RUN, "logger.verbose=2"], cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert any(line.startswith("| time/") or "total_timesteps" in line for line in result.stdout.splitlines())


def test_without_evaluations_a_line_per_tenth_of_this_runs_own_steps(caplog):
    from rlexp.monitor.progress import Progress

    caplog.set_level("INFO", "rlexp.monitor.progress")
    progress = Progress(target=1100, evaluations=None, terminal=False, origin=1000)  # a continued agent's 1000
    progress.num_timesteps = 1000  # (SB3 sets it when learn() starts; no EvalCallback: no env asked)
    progress._on_training_start()
    for step in range(1008, 1112, 8):  # 8 envs; the last rollout overshoots the target
        progress.num_timesteps = step
        progress._on_step()
    lines = _logged(caplog)
    assert len(lines) == 9 and all(line.startswith("step ") for line in lines)
    assert lines[0].startswith("step 16/100 (16%; the agent's step 1,016) |") and lines[-1].startswith(
        "step 96/100 (96%; the agent's step 1,096) |"
    )


def test_a_resumed_run_counts_its_steps_from_its_start(caplog):
    from rlexp.monitor.progress import Progress

    caplog.set_level("INFO", "rlexp.monitor.progress")
    progress = Progress(target=1000, evaluations=None, terminal=False)  # resumed at step 600 of a new agent
    progress.num_timesteps = 600
    progress._on_training_start()
    progress.num_timesteps = 640
    progress._on_step()
    assert _logged(caplog)[0].startswith("step 640/1,000 (64%) |")


def _logged(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "rlexp.monitor.progress"]


def test_a_terminal_of_no_columns_gets_lines_not_an_invisible_bar(tmp_path):
    # a pseudo-terminal that reports 0 columns (some CI runners, `script`): tqdm would draw a bar of width 0
    fcntl, pty, termios = (pytest.importorskip(m) for m in ("fcntl", "pty", "termios"))
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 0, 0, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "HYDRA_FULL_ERROR")}
    proc = subprocess.Popen([sys.executable, "-m", "rlexp", *RUN], cwd=tmp_path, stdout=slave, stderr=slave, env=env)
    os.close(slave)
    out = b""
    while chunk := _read(master):
        out += chunk
    assert proc.wait(timeout=300) == 0, out.decode(errors="replace")[-2000:]
    lines = out.decode(errors="replace").splitlines()
    assert sum(line.startswith("rlexp: step ") for line in lines) == 2


def _read(fd: int) -> bytes:
    """What the pseudo-terminal has; b"" once the process closed it."""
    try:
        return os.read(fd, 65536)
    except OSError:  # (EIO: the other end is closed)
        return b""
