"""Stop when solved (callbacks.stop): a real run ends after the periodic evaluation that reaches the
threshold, then saves and evaluates as a full run does; the tuned defaults solve CartPole and Pendulum
early at seed 0 (slow)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import FAST, rlexp_cli
from stable_baselines3 import PPO

# CartPole episodes of an untrained agent last 8+ steps: a threshold of 5 is reached at the first evaluation
EARLY = [*FAST, "env.n_envs=1", "algo.n_steps=64", "algo.batch_size=64", "n_timesteps=2048"]


def test_a_reached_threshold_ends_training_after_that_evaluation(tmp_path):
    result = rlexp_cli([*EARLY, "callbacks.stop=5", "hydra.run.dir=run"], cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    run_dir = tmp_path / "run"
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "completed"
    assert (summary["stop_reward_threshold"], summary["stopped_early_at"], summary["steps_done"]) == (5.0, 128, 128)
    assert summary["final_eval"]["episodes"] == 2 and summary["target_steps"] == 2048
    assert list(np.load(run_dir / "evaluations.npz")["timesteps"]) == [128]  # the one that reached it
    assert PPO.load(run_dir / "model.zip").num_timesteps == 128  # the saved agent is the stopped one
    ending = result.stdout.strip().splitlines()[-3:]
    assert "rlexp: stopped early at step 128 of 2,048: an evaluation reached 5.0 (callbacks.stop)" in ending


def test_solved_is_the_env_specs_threshold(tmp_path):
    result = rlexp_cli([*FAST, "callbacks.stop=solved", "hydra.run.dir=run"], cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["stop_reward_threshold"] == 475.0  # CartPole-v1's
    means = np.load(tmp_path / "run" / "evaluations.npz")["results"].mean(axis=1)
    # (an untrained linear-ish policy can balance the pole: it stops only if an evaluation reached 475)
    assert (summary["stopped_early_at"] is not None) == (means.max() >= 475.0)


def test_a_run_that_never_reaches_its_threshold_trains_its_budget(tmp_path):
    result = rlexp_cli([*FAST, "callbacks.stop.reward_threshold=1000", "hydra.run.dir=run"], cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert (summary["stop_reward_threshold"], summary["stopped_early_at"], summary["steps_done"]) == (1000.0, None, 256)


def test_no_stop_keys_in_the_summary_of_a_run_without_a_threshold(tmp_path):
    result = rlexp_cli([*FAST, "hydra.run.dir=run"], cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert "stopped_early_at" not in summary and summary["steps_done"] == 256


@pytest.mark.slow
@pytest.mark.parametrize("pair", [["algo=ppo", "env=cartpole"], ["algo=sac", "env=pendulum"]])
def test_tuned_defaults_stop_solved_early_at_or_above_the_threshold(pair, tmp_path):
    # the default evaluation schedule (every 10,000 steps): solved by 10k of 100k (PPO) and 20k (SAC)
    args = [*pair, "callbacks.stop=solved", "logger=csv", "curves=false"]
    result = rlexp_cli([*args, "hydra.run.dir=run"], cwd=tmp_path, timeout=1800)
    assert result.returncode == 0, result.stderr[-2000:]
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    threshold = {"env=cartpole": 475.0, "env=pendulum": -200.0}[pair[1]]  # CartPole-v1's spec; pendulum.yaml's
    assert summary["stop_reward_threshold"] == threshold
    assert summary["stopped_early_at"] is not None and summary["stopped_early_at"] < summary["target_steps"]
    assert summary["final_eval"]["mean"] >= threshold
