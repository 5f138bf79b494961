"""The steps a run trains: whole rollouts, said before training, counted by its progress and evaluations."""

from __future__ import annotations

import pytest

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


# (a run that trains whole rollouts past its n_timesteps, says so first and counts to them: tests/monitor/test_progress.py)
