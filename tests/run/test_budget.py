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
    from stable_baselines3 import PPO, SAC
    from stable_baselines3.common.env_util import make_vec_env

    ppo = PPO("MlpPolicy", make_vec_env("CartPole-v1", n_envs=8), n_steps=32, batch_size=256)
    assert budget_note(ppo, 100_000, true_steps(0, 100_000, 256)) == (
        "n_timesteps=100,000 trains 100,096 steps: learn() collects whole rollouts of 256 steps "
        "(algo.n_steps=32 x env.n_envs=8), as in RL Zoo",
        False,
    )
    assert not budget_note(ppo, 1_000, true_steps(0, 1_000, 256))[1]  # 1,024: only 2.4% more, said as a line
    assert budget_note(ppo, 1_000, 1_000 * (1 + WARN_ABOVE) + 1)[1]
    assert budget_note(ppo, 1_024, 1_024) is None
    # a linear schedule, as RL Zoo's PPO CartPole has, is below 0 past n_timesteps: said where it is far past
    linear = PPO("MlpPolicy", make_vec_env("CartPole-v1", n_envs=8), n_steps=128, learning_rate=lambda p: p * 1e-3)
    line, warn = budget_note(linear, 300, true_steps(0, 300, 1024))
    assert warn and line.endswith(
        "; its learning-rate schedule goes below 0 past n_timesteps (a multiple of 1,024 steps avoids it)"
    )
    episodes = SAC("MlpPolicy", make_vec_env("Pendulum-v1"), train_freq=(1, "episode"))
    assert budget_note(episodes, 1_000, 1_000) == (
        "n_timesteps=1,000: learn() collects whole episodes (algo.train_freq=1 episode): it ends past it",
        False,
    )


# (a run that trains whole rollouts past its n_timesteps, says so first and counts to them: tests/monitor/test_progress.py)
