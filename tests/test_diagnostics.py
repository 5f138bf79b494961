"""Training diagnostics on real runs: the random-policy baseline and the warnings it raises."""

from __future__ import annotations

import json

import pytest
from conftest import FAST, rlexp_cli, train

# the test envs, a module written next to each run (imported as diag_envs:<Class>)
ENVS = """import gymnasium as gym
import numpy as np


class _Still(gym.Env):
    \"\"\"Two-float observations, two actions; subclasses say what a step gives.\"\"\"

    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(2, np.float32), {}


class ConstantEnv(_Still):
    \"\"\"Reward 1 per step and 10 steps per episode, whatever the actions: no policy beats a random one.\"\"\"

    def step(self, action):
        self.t += 1
        return np.zeros(2, np.float32), 1.0, self.t >= 10, False, {}


class NaNAfter(_Still):
    \"\"\"Episodes of 20 steps; from its k-th step (counted over episodes) on, the observation is NaN, or
    with huge=True the reward 1e30 (finite, but no float32 return or loss survives it).\"\"\"

    def __init__(self, k=300, huge=False):
        self.k, self.huge, self.total, self.t = k, huge, 0, 0

    def step(self, action):
        self.t += 1
        self.total += 1
        bad = self.total >= self.k
        obs = np.full(2, np.nan if bad and not self.huge else 0.1, np.float32)
        return obs, 1e30 if bad and self.huge else 1.0, self.t >= 20, False, {}
"""


def test_a_reward_that_ignores_the_actions_is_no_better_than_random(tmp_path):
    (tmp_path / "diag_envs.py").write_text(ENVS)
    result = rlexp_cli([*FAST, "env.id=diag_envs:ConstantEnv", "~tuned", "hydra.run.dir=run"], cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["random_baseline"]["mean"] == summary["final_eval"]["mean"] == 10.0
    (found,) = summary["diagnostics"]
    assert found.startswith("final eval 10.00 is no better than the random policy (10.00, 95% CI [10.00, 10.00])")
    lines = result.stdout.strip().splitlines()
    assert lines[-2] == f"rlexp: warning: {found}" and lines[-1].endswith(", random policy 10.00")


def test_no_baseline_when_turned_off(tmp_path):
    summary = train([*FAST, "random_baseline.episodes=0"], tmp_path)
    assert "random_baseline" not in summary and "diagnostics" not in summary


@pytest.mark.slow
def test_a_healthy_ppo_cartpole_run_gives_no_warning(tmp_path):
    result = rlexp_cli(["hydra.run.dir=run"], cwd=tmp_path, timeout=900)  # README's first run
    assert result.returncode == 0, result.stderr[-2000:]
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["final_eval"]["mean"] > summary["random_baseline"]["ci95_mean"][1]
    assert "diagnostics" not in summary and "rlexp: warning" not in result.stdout


NAN_RUN = ["env.id=diag_envs:NaNAfter", "~tuned", "env.n_envs=1", "n_timesteps=2000", "algo.n_steps=64"]
NAN_RUN += ["algo.batch_size=64", "logger=csv", "callbacks=checkpoints", "callbacks.checkpoint.freq=128"]


def test_a_nan_observation_stops_the_run_at_once_and_keeps_its_checkpoints(tmp_path):
    from stable_baselines3 import PPO

    (tmp_path / "diag_envs.py").write_text(ENVS)
    result = rlexp_cli([*NAN_RUN, "hydra.run.dir=run"], cwd=tmp_path)
    assert result.returncode == 1
    newest = tmp_path / "run" / "checkpoints" / "step_000000000256"
    expected = (
        f"training in {tmp_path / 'run'} diverged at step 300: found nan in observations (from the env); the "
        f"newest checkpoint is {newest}"
    )
    assert result.stderr.strip().splitlines()[-1] == f"rlexp: error: {expected}"
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert (summary["status"], summary["error"]) == ("failed", f"Diverged: {expected}")
    assert not (tmp_path / "run" / "model.zip").exists()  # nothing saved after the NaN
    assert PPO.load(newest / "model.zip").num_timesteps == 256


@pytest.mark.slow
def test_a_loss_that_overflows_stops_the_run_naming_it(tmp_path):
    (tmp_path / "diag_envs.py").write_text(ENVS)
    result = rlexp_cli([*NAN_RUN, "+env.kwargs.huge=true", "hydra.run.dir=run"], cwd=tmp_path)
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith(f"rlexp: error: training in {tmp_path / 'run'} diverged at step ") and (
        " is nan" in last or " is inf" in last
    )
