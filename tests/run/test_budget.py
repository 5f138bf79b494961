"""The steps a run trains: whole rollouts, said before training, counted by its progress and evaluations."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import rlexp_cli

from rlexp.run.budget import WARN_ABOVE, budget_note, rollout_steps, true_steps


@pytest.mark.unit
def test_a_rollout_is_what_learn_collects_between_two_budget_checks():
    from sb3_contrib import ARS
    from stable_baselines3 import DQN, PPO, SAC
    from stable_baselines3.common.env_util import make_vec_env

    cartpole = make_vec_env("CartPole-v1", n_envs=2)
    assert rollout_steps(PPO("MlpPolicy", cartpole, n_steps=64, batch_size=64)) == (
        128,
        "algo.n_steps=64 x env.n_envs=2",
    )
    assert rollout_steps(DQN("MlpPolicy", cartpole, train_freq=4))[0] == 8
    pendulum = make_vec_env("Pendulum-v1", n_envs=1)
    assert rollout_steps(SAC("MlpPolicy", pendulum, train_freq=(1, "episode"))) is None  # episodes: no fixed size
    assert rollout_steps(ARS("MlpPolicy", pendulum)) is None


@pytest.mark.unit
def test_the_line_is_a_warning_only_well_past_the_budget():
    rollout = (256, "algo.n_steps=32 x env.n_envs=8")
    assert budget_note(100_000, true_steps(0, 100_000, 256), rollout) == (
        "n_timesteps=100,000 trains 100,096 steps: learn() collects whole rollouts of 256 steps "
        "(algo.n_steps=32 x env.n_envs=8), as in RL Zoo",
        False,
    )
    assert not budget_note(1_000, true_steps(0, 1_000, 256), rollout)[1]  # 1,024: only 2.4% more, said as a line
    assert budget_note(1_000, 1_000 * (1 + WARN_ABOVE) + 1, rollout)[1]
    assert budget_note(1_024, 1_024, rollout) is None and budget_note(1_000, 1_000, None) is None


def test_a_budget_below_a_rollout_trains_one_whole_rollout_and_says_so_first(tmp_path):
    # PPO CartPole's 8 envs x algo.n_steps=128: 1,024 steps a rollout, for n_timesteps=300
    run = ["n_timesteps=300", "algo.n_steps=128", "callbacks.eval.n_evaluations=2", "callbacks.eval.n_episodes=2"]
    result = rlexp_cli([*run, "callbacks.eval.final_episodes=2", "hydra.run.dir=run"], cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    said = (
        "n_timesteps=300 trains 1,024 steps: learn() collects whole rollouts of 1,024 steps "
        "(algo.n_steps=128 x env.n_envs=8), as in RL Zoo"
    )
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["target_steps"] == summary["steps_done"] == 1024 and said in summary["warnings"]
    assert f"rlexp: warning: {said}" in result.stderr.splitlines()
    progress = [line.split(" eval ")[0] for line in result.stdout.splitlines() if line.startswith("rlexp: step ")]
    assert progress == ["rlexp: step 512/1,024 (50%)", "rlexp: step 1,024/1,024 (100%)"]
    assert np.load(tmp_path / "run" / "evaluations.npz")["timesteps"].tolist() == [512, 1024]
    # RUN/rlexp.log holds what the console showed, in order: the warning before the first step of training
    log = (tmp_path / "run" / "rlexp.log").read_text().splitlines()
    first_step = next(i for i, line in enumerate(log) if " - step " in line)
    assert any(said in line for line in log[:first_step]) and "run saved to" in log[-1]
