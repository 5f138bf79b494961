"""Same seed, same agent: what keeps rlexp's training bit for bit the zoo's (benchmarks/zoo_parity.py measures
every pair; tests/zoo/test_zoo_parity.py a pair per family and algorithm) and a run the same run again."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import FAST, train
from stable_baselines3.common.save_util import load_from_zip_file
from stable_baselines3.common.utils import LinearSchedule as SB3LinearSchedule

from rlexp.builders.schedules import LinearSchedule, linear
from rlexp.rundir.pickles import restricted_loads


def test_the_linear_schedule_computes_as_the_zoo_s() -> None:
    """The zoo's ``lin_<v>`` is ``progress_remaining * v``; SB3's LinearSchedule rounds otherwise, which moved
    PPO CartPole's weights by 5.5e-4 after 20,000 steps."""
    progress = np.linspace(1.0, 0.0, 10_001)
    for initial in (1e-3, 2.5e-4, 0.2, 7.77e-4):
        ours = [linear(initial)(p) for p in progress]
        assert ours == [p * initial for p in progress]  # (bit for bit)
        sb3 = [SB3LinearSchedule(initial, 0.0, 1.0)(p) for p in progress]
        assert ours != sb3  # (what it fixed: not the same floats)
    assert linear(1.0, final_fraction=0.1)(0.5) == pytest.approx(0.55)


def test_the_zoo_s_pickled_schedule_opens_as_rlexp_s() -> None:
    """A zoo run's model pickles rl_zoo3.utils.SimpleLinearSchedule: it opens without rl_zoo3's code. (The
    pickle is made in a process of its own: importing rl_zoo3 patches gymnasium's TimeLimit for the process.)"""
    made = subprocess.run(
        [sys.executable, "-c", "import sys, cloudpickle; from rl_zoo3.utils import SimpleLinearSchedule; "
         "sys.stdout.buffer.write(cloudpickle.dumps(SimpleLinearSchedule(3e-4)))"],
        capture_output=True, check=True, timeout=120,
    )  # fmt: skip
    schedule = restricted_loads(made.stdout, "a zoo model's learning_rate")
    assert isinstance(schedule, LinearSchedule)
    assert [schedule(p) for p in (1.0, 0.3, 0.0)] == [3e-4, 0.3 * 3e-4, 0.0]
    assert "rl_zoo3" not in sys.modules


def _weights(run_dir: Path) -> dict[str, torch.Tensor]:
    return load_from_zip_file(run_dir / "model.zip", device="cpu", load_data=False)[1]["policy"]


def test_evaluations_do_not_change_what_a_run_learns(tmp_path: Path) -> None:
    """Stochastic evaluations (as Atari's and MiniGrid's) sample from torch's generator: a run evaluated every
    128 steps trains the weights of the same run never evaluated, with its random baseline off."""
    base = [
        "algo=ppo",
        "env=cartpole",
        "env.n_envs=2",
        "algo.n_steps=64",
        "n_timesteps=768",
        "logger=csv",
        "curves=false",
    ]
    train([*base, "callbacks.eval.freq=0", "random_baseline.episodes=0"], tmp_path / "plain")
    train([*base, "callbacks.eval.freq=128", "callbacks.eval.n_episodes=2", "callbacks.eval.deterministic=false"],
          tmp_path / "observed")  # fmt: skip
    plain, observed = _weights(tmp_path / "plain"), _weights(tmp_path / "observed")
    assert all(torch.equal(plain[k], observed[k]) for k in plain)


def test_a_panda_env_repeats_its_episodes() -> None:
    """panda-gym 3 draws a fresh generator from the OS at every unseeded reset (each episode's goal): rlexp's
    panda presets seed every reset from the first (SeededResets), so the same seed gives the same episodes."""
    pytest.importorskip("panda_gym")
    import gymnasium as gym

    from rlexp.builders.wrappers import SeededResets

    def goals(wrapped: bool) -> list[np.ndarray]:
        env = gym.make("PandaReach-v3")
        env = SeededResets(env) if wrapped else env
        found = [env.reset(seed=0)[0]["desired_goal"]] + [env.reset()[0]["desired_goal"] for _ in range(3)]
        env.close()
        return found

    assert np.array_equal(goals(True), goals(True))
    assert not np.array_equal(goals(False)[1:], goals(False)[1:])  # (panda-gym's own: goals from the OS)


@pytest.mark.slow
def test_a_panda_run_trains_the_same_weights_again(tmp_path: Path) -> None:
    pytest.importorskip("panda_gym")
    train([*FAST, "algo=tqc", "env=pandareach", "algo.learning_starts=100", "n_timesteps=160"], tmp_path / "a")
    train([*FAST, "algo=tqc", "env=pandareach", "algo.learning_starts=100", "n_timesteps=160"], tmp_path / "b")
    a, b = _weights(tmp_path / "a"), _weights(tmp_path / "b")
    assert all(torch.equal(a[k], b[k]) for k in a)
