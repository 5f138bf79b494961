"""The run directory contract: complete, reproducible, loadable by plain SB3, resumable, atomic."""

from __future__ import annotations

import json
import os
import pickle
import shutil
import signal
import subprocess
import sys
import time
import zipfile

import numpy as np
import pytest
from conftest import FAST, train

from rlexp.errors import ConfigError


def test_run_dir_is_complete(tmp_path):
    summary = train([*FAST, "logger=default", "callbacks.checkpoint.freq=128"], tmp_path)
    for name in ["model.zip", "best/model.zip", "evaluations.npz", "config.yaml", "command.txt", "summary.json"]:
        assert (tmp_path / name).is_file(), name
    assert list((tmp_path / "monitor" / "train").glob("*.monitor.csv"))
    assert list((tmp_path / "monitor" / "eval").glob("*.monitor.csv"))
    assert list((tmp_path / "logs").glob("events.out.tfevents.*"))
    assert (tmp_path / "logs" / "progress.csv").is_file()
    assert sorted(p.name for p in (tmp_path / "checkpoints").iterdir()) == ["step_000000000128", "step_000000000256"]
    assert "tuned_file: ppo_cartpole" in (tmp_path / "config.yaml").read_text()
    assert "n_timesteps: 256" in (tmp_path / "config.yaml").read_text()  # after overrides
    assert summary["status"] == "completed"
    assert summary["tuned_file"] == "ppo_cartpole"
    assert (summary["algo"], summary["env"], summary["env_id"], summary["seed"]) == (
        "ppo",
        "cartpole",
        "CartPole-v1",
        0,
    )
    assert summary["steps_done"] == 256
    for key in ["python", "torch", "stable-baselines3", "gymnasium", "rlexp"]:
        assert summary["versions"][key]
    for key in ["host", "start_time", "end_time", "git", "final_eval", "best_eval"]:
        assert key in summary
    assert set(summary["final_eval"]) >= {"mean", "std", "episodes"}
    assert set(summary["best_eval"]) >= {"mean", "std", "step"}


def test_no_tuned_file_is_recorded_as_none(tmp_path):
    summary = train([*FAST, "algo=a2c", "env=pendulum"], tmp_path)
    assert summary["tuned_file"] == "a2c_pendulum"
    summary = train([*FAST, "~tuned"], tmp_path / "plain")
    assert summary["tuned_file"] is None


def _evaluations(run_dir):
    return np.load(run_dir / "evaluations.npz")["results"]


def test_same_config_and_seed_give_identical_results(tmp_path):
    overrides = [*FAST, "algo=sac", "env=pendulum", "algo.learning_starts=64", "env.normalize=true"]
    first = train(overrides, tmp_path / "a")
    second = train(overrides, tmp_path / "b")
    other_seed = train([*overrides, "seed=1"], tmp_path / "c")
    assert first["final_eval"] == second["final_eval"]
    np.testing.assert_array_equal(_evaluations(tmp_path / "a"), _evaluations(tmp_path / "b"))
    assert other_seed["final_eval"]["mean"] != first["final_eval"]["mean"]


def test_plain_sb3_load_reproduces_the_recorded_score(tmp_path):
    """The final score, re-evaluated by a plain SB3 script as README shows, after periodic evaluations."""
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.evaluation import evaluate_policy
    from stable_baselines3.common.vec_env import VecNormalize

    summary = train(
        [
            "env=pendulum",
            "algo=ppo",
            "env.normalize=true",
            "n_timesteps=2048",
            "callbacks.eval.freq=512",
            "logger=csv",
            "callbacks.eval.final_episodes=5",
            "seed=3",
        ],
        tmp_path,
    )
    assert summary["best_eval"] is not None  # periodic evaluations did use the eval env
    env = VecNormalize.load(str(tmp_path / "vecnormalize.pkl"), make_vec_env("Pendulum-v1", n_envs=1, seed=10_003))
    env.training, env.norm_reward = False, False
    model = PPO.load(tmp_path / "model.zip")  # load(env=env) would reseed env with the training seed
    mean, _ = evaluate_policy(model, env, n_eval_episodes=5, deterministic=True)
    assert mean == pytest.approx(summary["final_eval"]["mean"], rel=1e-6)


def _obs_count(run_dir) -> float:
    with open(run_dir / "vecnormalize.pkl", "rb") as f:
        return pickle.load(f).obs_rms.count


@pytest.mark.parametrize(
    ("algo", "env", "extra"),
    [
        (
            "ppo",
            "pendulum",
            ["env.normalize=true", "algo.n_steps=128", "algo.batch_size=64", "callbacks.checkpoint.freq=96"],
        ),
        (
            "sac",
            "pendulum",
            ["env.normalize=true", "algo.learning_starts=64", "callbacks.checkpoint.save_replay_buffer=true"],
        ),
    ],
)
def test_continue_training_keeps_counter_statistics_and_buffer(algo, env, extra, tmp_path):
    first = train([*FAST, f"algo={algo}", f"env={env}", "~tuned", *extra], tmp_path / "first")
    stats_before = _obs_count(tmp_path / "first")
    second = train(
        [*FAST, f"algo={algo}", f"env={env}", "~tuned", *extra, f"trained_agent={tmp_path / 'first'}"],
        tmp_path / "second",
    )
    assert second["start_step"] == first["steps_done"]
    assert second["steps_done"] == first["steps_done"] + 256
    stats_after = _obs_count(tmp_path / "second")
    assert stats_after > stats_before + 255  # statistics continued, not restarted
    if algo == "ppo":  # checkpoints keep their schedule across the continuation: 288, 384, 480
        assert [p.name for p in sorted((tmp_path / "second" / "checkpoints").iterdir())] == [
            f"step_{n:012d}" for n in (288, 384, 480)
        ]
    if algo == "sac":
        from stable_baselines3 import SAC

        model = SAC.load(tmp_path / "second" / "model.zip")
        model.load_replay_buffer(tmp_path / "second" / "replay_buffer.pkl")
        assert model.replay_buffer.size() == 512  # the first run's transitions were kept


def test_continue_from_a_zip_file(tmp_path):
    train(FAST, tmp_path / "first")
    first = json.loads((tmp_path / "first" / "summary.json").read_text())
    summary = train([*FAST, f"trained_agent={tmp_path / 'first' / 'best' / 'model.zip'}"], tmp_path / "second")
    assert summary["start_step"] == first["best_eval"]["step"]


def test_trained_agent_of_another_algorithm_is_refused(tmp_path):
    train(FAST, tmp_path / "ppo")
    with pytest.raises(ConfigError, match=r"holds a stable_baselines3\.PPO agent, not algo=stable_baselines3\.A2C"):
        train([*FAST, "algo=a2c", f"trained_agent={tmp_path / 'ppo'}"], tmp_path / "a2c")
    bare = tmp_path / "elsewhere" / "agent.zip"  # no summary.json beside it
    bare.parent.mkdir()
    shutil.copy(tmp_path / "ppo" / "model.zip", bare)
    with pytest.raises(ConfigError, match="cannot be loaded as DQN"):
        train([*FAST, "algo=dqn", f"trained_agent={bare}"], tmp_path / "dqn")
    not_a_zip = tmp_path / "elsewhere" / "notes.zip"
    not_a_zip.write_text("hello")
    with pytest.raises(ConfigError, match=r"not an SB3 model \.zip"):
        train([*FAST, f"trained_agent={not_a_zip}"], tmp_path / "x")


def test_atomic_write_keeps_the_old_file_when_the_writer_dies(tmp_path):
    from rlexp.run.saving import atomic_write

    dest = tmp_path / "model.zip"
    dest.write_bytes(b"good")

    def crash(tmp):
        tmp.write_bytes(b"half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        atomic_write(dest, crash)
    assert dest.read_bytes() == b"good"
    assert [p.name for p in tmp_path.iterdir()] == ["model.zip"]


def test_killed_run_leaves_only_whole_files(tmp_path):
    """SIGKILL a run that saves often: every model and summary on disk is still whole."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rlexp",
            "n_timesteps=1000000",
            "logger=csv",
            "callbacks.eval.freq=256",
            "callbacks.eval.n_episodes=1",
            "callbacks.checkpoint.freq=256",
            "hydra.run.dir=run",
        ],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.time() + 120
    while time.time() < deadline and len(list((tmp_path / "run").glob("checkpoints/step_*"))) < 3:
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    models = list((tmp_path / "run").rglob("model.zip"))
    assert len(models) >= 3
    for model in models:
        assert zipfile.ZipFile(model).testzip() is None
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["status"] == "running"


def test_an_existing_run_dir_is_never_overwritten(tmp_path):
    train(FAST, tmp_path)
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    with pytest.raises(ConfigError, match="already holds a run"):
        train([*FAST, "seed=1"], tmp_path)
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before


def test_replacing_an_agent_dir_leaves_no_gap_and_no_leftovers(tmp_path):
    from stable_baselines3 import PPO

    from rlexp.run.saving import save_agent_dir

    model = PPO("MlpPolicy", "CartPole-v1", n_steps=64, batch_size=64)
    save_agent_dir(model, tmp_path / "best")
    first = (tmp_path / "best" / "model.zip").read_bytes()
    model.learn(64)
    save_agent_dir(model, tmp_path / "best")
    assert (tmp_path / "best" / "model.zip").read_bytes() != first
    assert [p.name for p in tmp_path.iterdir()] == ["best"]


def test_a_failure_after_training_started_keeps_the_run_dir_with_status_failed(tmp_path):
    with pytest.raises(RuntimeError, match="crashed at step 100"):
        train([*FAST, "env.id=broken_envs:CrashingEnv", "~tuned", "env.n_envs=1", "algo.n_steps=64"], tmp_path)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["status"] == "failed"
    assert summary["error"] == "RuntimeError: crashed at step 100"
    assert (tmp_path / "config.yaml").is_file()
