"""Every algorithm trains a few hundred steps end to end (one row per algorithm, TorchRL-style)."""

from __future__ import annotations

import pytest
from conftest import FAST, train

from rlexp.config.algorithms import ALGORITHMS

# off-policy: 64 updates of 256 steps (the updates run; a few hundred would only cost time)
UPDATES = ["algo.learning_starts=192"]
# algorithm -> (env preset, extra overrides that keep the run to a few hundred steps); one row per registered
# algorithm (a missing row fails its test)
SMOKE = {
    "ppo": ("cartpole", []),
    "a2c": ("cartpole", []),
    "dqn": ("cartpole", []),
    "qrdqn": ("cartpole", []),
    "trpo": ("cartpole", ["algo.n_steps=128", "algo.batch_size=64"]),
    "ars": ("cartpole", []),
    "recurrent_ppo": ("cartpole", ["algo.n_steps=64", "algo.batch_size=64"]),
    "sac": ("pendulum", UPDATES),
    "td3": ("pendulum", UPDATES),
    "ddpg": ("pendulum", UPDATES),
    "tqc": ("pendulum", UPDATES),
    "crossq": ("pendulum", UPDATES),
}


@pytest.mark.parametrize("algo", sorted(a.name for a in ALGORITHMS))
def test_algorithm_trains(algo, tmp_path):
    env, extra = SMOKE[algo]
    summary = train([f"algo={algo}", f"env={env}", *FAST, *extra], tmp_path)
    assert summary["status"] == "completed"
    assert summary["steps_done"] >= 256
    assert summary["final_eval"]["episodes"] == 2
    assert (tmp_path / "model.zip").is_file()
    assert (tmp_path / "best" / "model.zip").is_file()


# env presets beyond the classic-control ones: Box2D, MuJoCo and Atari through the same runner
@pytest.mark.parametrize(
    ("algo", "env", "extra"),
    [
        # (Box2D is covered by bipedalwalker in the default run; LunarLander's long episodes in the slow one)
        pytest.param("ppo", "lunarlander", [], marks=pytest.mark.slow),
        ("td3", "bipedalwalker", UPDATES),
        ("sac", "halfcheetah", UPDATES),
        ("ppo", "atari", ["env.n_envs=2", "algo.n_steps=64", "algo.batch_size=64", "env.max_episode_steps=300"]),
    ],
)
def test_env_presets_train(algo, env, extra, tmp_path):
    summary = train([f"algo={algo}", f"env={env}", *FAST, *extra], tmp_path)
    assert summary["status"] == "completed"


def test_her_replay_buffer_on_a_goal_env(tmp_path):
    summary = train(
        [
            "algo=dqn",
            "env.id=stable_baselines3.common.envs:BitFlippingEnv",
            "+env.kwargs.n_bits=4",
            "env.max_episode_steps=4",
            "algo.policy=MultiInputPolicy",
            "algo.learning_starts=32",
            "algo.replay_buffer_class={_target_:hydra.utils.get_class,path:stable_baselines3.HerReplayBuffer}",
            "+algo.replay_buffer_kwargs.n_sampled_goal=2",
            "+algo.replay_buffer_kwargs.goal_selection_strategy=future",
            *FAST,
        ],
        tmp_path,
    )
    assert summary["status"] == "completed"


def test_action_noise_policy_kwargs_and_schedules(tmp_path):
    """Noise, an activation function by _target_, and a cosine learning rate reach the model."""
    from stable_baselines3 import TD3

    train(
        [
            "algo=td3",
            "env=pendulum",
            "action_noise.kind=ornstein_uhlenbeck",
            "action_noise.std=0.3",
            "+algo.policy_kwargs.activation_fn._target_=hydra.utils.get_class",
            "+algo.policy_kwargs.activation_fn.path=torch.nn.Tanh",
            "+algo.policy_kwargs.net_arch=[32,32]",
            "schedule@lr_schedule=cosine",
            "algo.learning_starts=64",
            *FAST,
        ],
        tmp_path,
    )
    model = TD3.load(tmp_path / "model.zip")
    assert model.policy.actor.mu[1].__class__.__name__ == "Tanh"
    assert model.actor.mu[0].out_features == 32
    assert type(model.action_noise).__name__ == "OrnsteinUhlenbeckActionNoise"
    assert model.lr_schedule(1.0) == pytest.approx(1e-3)
    assert model.lr_schedule(0.5) == pytest.approx(5e-4)


def test_vecnormalize_frame_stack_and_wrappers(tmp_path):
    summary = train(
        [
            "algo=ppo",
            "env=pendulum",
            "env.normalize=true",
            "env.frame_stack=2",
            "wrappers=time_feature",
            "~tuned",
            "algo.n_steps=128",
            "algo.batch_size=64",
            *FAST,
        ],
        tmp_path,
    )
    assert summary["status"] == "completed"
    assert (tmp_path / "vecnormalize.pkl").is_file()
    assert (tmp_path / "best" / "vecnormalize.pkl").is_file()


def test_subproc_vec_env(tmp_path):
    summary = train(["env.vec_env=subproc", "env.n_envs=2", *FAST], tmp_path)
    assert summary["status"] == "completed"
