"""What the env builder and the model builder decide: env ids, checker, device, threads."""

from __future__ import annotations

import pytest
import torch
from conftest import FAST, compose_cfg, train

from rlexp.builders.device import resolve_device
from rlexp.builders.envs import build_vec_env, resolve_spec
from rlexp.errors import ConfigError


def test_resolve_spec_accepts_ids_module_ids_and_classes():
    assert resolve_spec("CartPole-v1").id == "CartPole-v1"
    assert resolve_spec("ale_py:PongNoFrameskip-v4").id == "PongNoFrameskip-v4"
    assert resolve_spec("broken_envs:BadObservationEnv").entry_point == "broken_envs:BadObservationEnv"
    with pytest.raises(ConfigError, match="Did you mean: `CartPole`"):
        resolve_spec("CartPol-v1")
    with pytest.raises(ConfigError, match="cannot import module 'no_such_module'"):
        resolve_spec("no_such_module:Env")


def test_env_checker_runs_on_request(tmp_path):
    summary = train([*FAST, "env.check=true"], tmp_path / "ok")
    assert summary["status"] == "completed"
    with pytest.raises(ConfigError, match="fails Gymnasium's env checker"):
        train([*FAST, "env.id=broken_envs:BadObservationEnv", "env.check=true", "~tuned"], tmp_path / "bad")


def test_eval_env_uses_eval_kwargs_and_frozen_statistics(tmp_path):
    cfg, _ = compose_cfg(["env=pendulum", "env.normalize=true", "+env.eval_kwargs.g=3.0", "+env.kwargs.g=9.0"])
    train_env = build_vec_env(cfg.env, 0, tmp_path / "train")
    eval_env = build_vec_env(cfg.env, 0, tmp_path / "eval", for_eval=True)
    assert set(train_env.get_attr("g")) == {9.0}
    assert eval_env.get_attr("g") == [3.0]
    assert train_env.training and not eval_env.training and not eval_env.norm_reward


def test_atari_preset_stacks_and_transposes_frames(tmp_path):
    cfg, _ = compose_cfg(["env=atari", "algo=ppo", "env.n_envs=1"])
    venv = build_vec_env(cfg.env, 0, tmp_path)
    assert venv.observation_space.shape == (4, 84, 84)  # channels first for the CNN


@pytest.mark.parametrize(
    ("overrides", "device"),
    [
        (["algo=ppo"], "cpu"),  # MLP, on-policy: never the GPU
        (["algo=a2c"], "cpu"),
        (["algo=ppo", "env=atari"], "auto"),  # CNN policy: the GPU if there is one
        (["algo=sac", "env=pendulum"], "auto"),
        (["algo=ppo", "device=cuda"], "cuda"),  # an explicit choice is kept
    ],
)
def test_device_auto(overrides, device):
    cfg, _ = compose_cfg(overrides)
    assert resolve_device(cfg.device, cfg.algo, cfg.backend) == device


def test_torch_threads_are_set(tmp_path):
    import torch

    train(
        [*FAST, "torch_threads=2", "algo.n_steps=8", "callbacks.eval.final_episodes=1"], tmp_path
    )  # (one short rollout)
    assert torch.get_num_threads() == 2


def test_user_callback_progress_bar_and_early_stop(tmp_path):
    summary = train(
        [
            *FAST,
            "n_timesteps=100000",
            "callbacks.progress_bar=true",
            "+callbacks.extra.stop._target_=stable_baselines3.common.callbacks.StopTrainingOnMaxEpisodes",
            "+callbacks.extra.stop.max_episodes=3",
        ],
        tmp_path,
    )
    assert summary["status"] == "completed"
    assert summary["steps_done"] < 100000


def test_optimizers_step_with_foreach_unless_the_user_chose(tmp_path):
    """foreach changes no number (tests/test_readme.py reproduces the final score with plain SB3, whose
    optimizers loop) and stays as a user gives it; the saved agent keeps it."""
    from stable_baselines3 import PPO, SAC

    train([*FAST, "algo=sac", "env=pendulum", "algo.learning_starts=192"], tmp_path / "sac")
    sac = SAC.load(tmp_path / "sac" / "model.zip")
    optimizers = (sac.actor.optimizer, sac.critic.optimizer, sac.ent_coef_optimizer)
    assert [g["foreach"] for o in optimizers for g in o.param_groups] == [True, True, True]
    train([*FAST, "+algo.policy_kwargs.optimizer_kwargs={foreach:false}"], tmp_path / "ppo")
    ppo = PPO.load(tmp_path / "ppo" / "model.zip")
    assert [g["foreach"] for g in ppo.policy.optimizer.param_groups] == [False]


@pytest.mark.parametrize(
    "policy_kwargs",
    [{"optimizer_kwargs": {"differentiable": True}}, {"optimizer_class": torch.optim.SGD}],
)
def test_foreach_leaves_what_it_does_not_support_or_was_not_checked_for(policy_kwargs):
    """differentiable optimizers cannot step with foreach; SGD's foreach results were not checked."""
    from stable_baselines3 import PPO

    from rlexp.builders.torch_settings import foreach_optimizers

    model = PPO("MlpPolicy", "CartPole-v1", n_steps=32, batch_size=32, policy_kwargs=policy_kwargs, device="cpu")
    foreach_optimizers(model)
    assert [g["foreach"] for g in model.policy.optimizer.param_groups] == [None]
