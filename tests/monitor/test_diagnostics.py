"""Training diagnostics on real runs: the random-policy baseline and the warnings it raises."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from conftest import FAST, console_shape, docs_line, rlexp_cli, train
from PIL import Image

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


class GapEnv(ConstantEnv):
    \"\"\"ConstantEnv paying ``reward`` per step: eval_kwargs make the eval env pay another one.\"\"\"

    def __init__(self, reward=1.0):
        self.reward = reward

    def step(self, action):
        obs, _, terminated, truncated, info = super().step(action)
        return obs, self.reward, terminated, truncated, info


class NoiseEnv(_Still):
    \"\"\"Random observations, a tiny reward noise independent of them: no value function explains it.\"\"\"

    def step(self, action):
        self.t += 1
        obs = self.np_random.uniform(-1, 1, 2).astype(np.float32)
        return obs, float(self.np_random.normal(0.0, 1e-3)), self.t >= 20, False, {}


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
    assert docs_line("guides/diagnostics.md", "rlexp: warning: final eval 10.00") == f"rlexp: warning: {found}"
    # (warnings on stderr, the run's last line on stdout)
    assert result.stderr.strip().splitlines()[-1] == f"rlexp: warning: {found}"
    assert result.stdout.strip().splitlines()[-1].endswith(", random policy 10.00")


def test_no_baseline_when_turned_off(tmp_path):
    summary = train([*FAST, "random_baseline.episodes=0"], tmp_path)
    assert "random_baseline" not in summary and summary["diagnostics"] == []


@pytest.mark.slow
def test_a_healthy_ppo_cartpole_run_gives_no_warning(tmp_path):
    result = rlexp_cli(["hydra.run.dir=run"], cwd=tmp_path, timeout=900)  # README's first run
    assert result.returncode == 0, result.stderr[-2000:]
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["final_eval"]["mean"] > summary["random_baseline"]["ci95_mean"][1]
    assert summary["diagnostics"] == [] and "rlexp: warning" not in result.stdout + result.stderr


NAN_RUN = ["env.id=diag_envs:NaNAfter", "~tuned", "env.n_envs=1", "n_timesteps=2000", "algo.n_steps=64"]
NAN_RUN += ["algo.batch_size=64", "logger=csv", "callbacks=checkpoints", "callbacks.checkpoint.freq=128"]


def test_a_nan_observation_stops_the_run_at_once_and_keeps_its_checkpoints(tmp_path):
    from stable_baselines3 import PPO

    (tmp_path / "diag_envs.py").write_text(ENVS)
    result = rlexp_cli([*NAN_RUN, "curves=true", "hydra.run.dir=run"], cwd=tmp_path)
    assert result.returncode == 1
    newest = tmp_path / "run" / "checkpoints" / "step_000000000256"
    expected = (
        f"training in {tmp_path / 'run'} diverged at step 300: found nan in observations (from the env); the "
        f"newest checkpoint is {newest}"
    )
    assert result.stderr.strip().splitlines()[-1] == f"rlexp: error: {expected}"
    shown = docs_line("guides/diagnostics.md", "rlexp: error: training in")  # the guide's, but for paths and numbers
    assert console_shape(shown) == console_shape(f"rlexp: error: {expected}")
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert (summary["status"], summary["error"]) == ("failed", f"Diverged: {expected}")
    assert not (tmp_path / "run" / "model.zip").exists()  # nothing saved after the NaN
    assert PPO.load(newest / "model.zip").num_timesteps == 256
    with Image.open(tmp_path / "run" / "curves.png") as image:  # how it went until it failed
        assert image.format == "PNG"


@pytest.mark.slow
def test_a_loss_that_overflows_stops_the_run_naming_it(tmp_path):
    (tmp_path / "diag_envs.py").write_text(ENVS)
    result = rlexp_cli([*NAN_RUN, "+env.kwargs.huge=true", "hydra.run.dir=run"], cwd=tmp_path)
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith(f"rlexp: error: training in {tmp_path / 'run'} diverged at step ") and (
        " is nan" in last or " is inf" in last
    )


def _warned(result, run_dir, kind: str) -> str:
    """The diagnostic of ``kind`` the run found: in summary.json, logged when found (rlexp.log, with the
    step) and repeated above the run's last line."""
    assert result.returncode == 0, result.stderr[-2000:]
    summary = json.loads((run_dir / "summary.json").read_text())
    (found,) = [line for line in summary["diagnostics"] if line.startswith(kind)]
    assert f"rlexp: warning: {found}" in result.stderr.splitlines()[-len(summary["diagnostics"]) :]
    return found


# PPO on CartPole with a learning rate 50x its tuned one and 20 epochs: each update jumps far beyond the
# trust region and the policy turns deterministic (entropy 0.67 -> 0.27 in 640 steps, seed 0)
RECKLESS = ["algo=ppo", "env=cartpole", "~tuned", "algo.learning_rate=0.05", "algo.n_epochs=20", "algo.n_steps=64"]
RECKLESS += ["algo.batch_size=64", "n_timesteps=1024"]


def test_a_reckless_learning_rate_is_warned_about_when_it_shows(tmp_path):
    run = [*RECKLESS, "diagnostics.early=1.0", "diagnostics.entropy_floor=0.5"]  # any time, under half
    result = rlexp_cli([*FAST, *run, "hydra.run.dir=run"], cwd=tmp_path)
    found = _warned(result, tmp_path / "run", "PPO's updates too large")
    assert (
        "(diagnostics.max_approx_kl, .kl_updates)" in found or "(diagnostics.max_clip_fraction, .kl_updates)" in found
    )
    found = _warned(result, tmp_path / "run", "policy entropy collapsed early")
    assert "the policy's entropy is" in found and "(diagnostics.entropy_floor=0.5)" in found
    assert found in (tmp_path / "run" / "rlexp.log").read_text()  # logged when found, not only at the end


def test_a_clip_range_past_its_end_is_no_large_update(tmp_path):
    # the zoo's linear clip range is unclamped: the second rollout ends at step 512 of 300, clip range -0.14,
    # and every sample counts as clipped (clip_fraction 1) although the update barely moves the policy
    run = ["algo=ppo", "env=cartpole", "env.n_envs=1", "algo.n_steps=256", "algo.batch_size=64", "n_timesteps=300"]
    summary = train([*FAST, *run], tmp_path)
    assert summary["steps_done"] == 512
    assert not [line for line in summary["diagnostics"] if "max_clip_fraction" in line], summary["diagnostics"]


def test_a_value_function_that_never_learns_explains_nothing(tmp_path):
    (tmp_path / "diag_envs.py").write_text(ENVS)
    run = ["env.id=diag_envs:NoiseEnv", "~tuned", "algo=ppo", "algo.vf_coef=0.0", "algo.n_steps=32"]
    run += ["n_timesteps=768", "diagnostics.explained_variance_updates=3"]
    result = rlexp_cli([*FAST, *run, "hydra.run.dir=run"], cwd=tmp_path)
    found = _warned(result, tmp_path / "run", "value function explains nothing")
    assert found.startswith("value function explains nothing: explained variance <= 0 in each of the first 3 updates")


def test_q_values_of_dqn_are_checked_against_the_largest_discounted_return(tmp_path):
    # q_factor=0: any Q-value "diverges"; the message gives the bound the critic is held to
    run = ["algo=dqn", "env=cartpole", "algo.learning_starts=64", "algo.train_freq=4", "diagnostics.q_factor=0"]
    result = rlexp_cli([*FAST, *run, "diagnostics.q_every=64", "hydra.run.dir=run"], cwd=tmp_path)
    found = _warned(result, tmp_path / "run", "Q-values diverging")
    assert (
        found.startswith("Q-values diverging: at step ") and "max |reward| / (1 - gamma) = 100 " in found
    )  # 1/(1-0.99)


def test_the_q_estimate_sees_rewards_as_the_critic_does_and_leaves_training_alone():
    from stable_baselines3 import SAC
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import VecNormalize

    from rlexp.monitor.health import estimated_q

    env = VecNormalize(make_vec_env("Pendulum-v1", seed=0))
    model = SAC("MlpPolicy", env, learning_starts=50, seed=0, device="cpu")
    model.learn(100)
    raw = float(np.abs(model.replay_buffer.rewards[: model.replay_buffer.pos]).max())
    state = np.random.get_state()[1].copy()
    mean_q, reward_max, gamma = estimated_q(model)
    assert (np.random.get_state()[1] == state).all()  # the run's own batches are drawn as without it
    assert reward_max == pytest.approx(float(np.abs(env.normalize_reward(np.array([raw]))).max()))
    assert reward_max != pytest.approx(raw) and gamma == model.gamma and mean_q >= 0
    with torch.no_grad():  # the critic's Q of a batch, as the check computes it
        obs = torch.as_tensor(env.normalize_obs(model.replay_buffer.observations[:50, 0]))
        q = torch.stack(model.critic(obs, torch.as_tensor(model.replay_buffer.actions[:50, 0])))
    assert mean_q == pytest.approx(float(q.abs().mean()), rel=0.5)  # another batch of the same buffer


def test_an_eval_env_that_pays_less_than_training_is_a_gap(tmp_path):
    (tmp_path / "diag_envs.py").write_text(ENVS)
    run = ["env.id=diag_envs:GapEnv", "~tuned", "+env.eval_kwargs.reward=0.0", "n_timesteps=512"]
    result = rlexp_cli([*FAST, *run, "hydra.run.dir=run"], cwd=tmp_path)
    found = _warned(result, tmp_path / "run", "evaluation far below training")
    assert found.startswith("evaluation far below training: final eval 0.00 against 10.00 over the last ")


def test_no_health_warning_with_diagnostics_none(tmp_path):
    summary = train([*FAST, *RECKLESS, "diagnostics=none"], tmp_path)
    assert summary["diagnostics"] == []


@pytest.mark.slow  # two DQN runs compared: in CI's slow run
def test_diagnostics_do_not_change_what_a_run_learns(tmp_path):
    from stable_baselines3 import DQN

    # DQN draws its batches and its exploration from numpy's global generator, which the Q check samples from
    run = [*FAST, "algo=dqn", "env=cartpole", "algo.learning_starts=64", "algo.train_freq=4", "n_timesteps=768"]
    checked = train([*run, "diagnostics.q_every=64"], tmp_path / "on")
    unchecked = train([*run, "diagnostics=none"], tmp_path / "off")
    assert checked["final_eval"] == unchecked["final_eval"]
    on, off = (DQN.load(tmp_path / d / "model.zip").policy.state_dict() for d in ("on", "off"))
    assert all(torch.equal(on[k], off[k]) for k in on)
