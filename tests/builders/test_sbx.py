"""backend=sbx: SAC and PPO trained through sbx (JAX) with the same run dir, evaluation, signal-resume and
search as SB3; what sbx does not take is refused in one line. The model zips are read back by sbx's load."""

from __future__ import annotations

import json
import signal
import subprocess

import numpy as np
import optuna
import pytest
import sbx
from background import ended, start, wait_for_file
from conftest import FAST, SMALL_SEARCH, rlexp_cli, stderr_lines
from optuna.trial import TrialState
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.evaluation import evaluate_policy

SAC = ["algo=sac", "env=pendulum", "algo.learning_starts=64", "algo.batch_size=64"]
PPO = ["algo=ppo", "env=cartpole", "env.n_envs=2", "algo.n_steps=32", "algo.batch_size=64", "algo.n_epochs=2"]
CASES = {"sac": (SAC, sbx.SAC, "Pendulum-v1"), "ppo": (PPO, sbx.PPO, "CartPole-v1")}


@pytest.mark.parametrize("algo", ["sac", pytest.param("ppo", marks=pytest.mark.slow)])  # (PPO: in CI's slow run)
@pytest.mark.slow
def test_sbx_run_dir_loads_in_sbx_and_evaluates_as_recorded(algo, tmp_path):
    overrides, cls, env_id = CASES[algo]
    result = rlexp_cli(
        [
            *FAST,
            *overrides,
            "backend=sbx",
            "callbacks.eval.final_episodes=3",
            "env.normalize=true",
            "hydra.run.dir=run",
        ],
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    run = tmp_path / "run"
    summary = json.loads((run / "summary.json").read_text())
    assert (summary["status"], summary["backend"], summary["algo_class"]) == ("completed", "sbx", f"sbx.{cls.__name__}")
    assert summary["device"] == "jax:cpu" and summary["versions"]["sbx-rl"] and summary["steps_done"] >= 256
    assert (run / "best" / "model.zip").is_file() and np.load(run / "evaluations.npz")["results"].shape[0] >= 1

    # sbx's own load, evaluated as README's plain script does: the recorded final score, exactly
    from stable_baselines3.common.vec_env import VecNormalize

    model = cls.load(run / "model.zip")
    env = VecNormalize.load(str(run / "vecnormalize.pkl"), make_vec_env(env_id, n_envs=3, seed=10_000))
    env.training, env.norm_reward = False, False
    mean, std = evaluate_policy(model, env, n_eval_episodes=3, deterministic=True)
    assert (mean, std) == (summary["final_eval"]["mean"], summary["final_eval"]["std"])

    # sbx pickles its JAX policy whole into model.zip: opened only when trusted (rlexp.rundir.pickles)
    refused = rlexp_cli(["evaluate", str(run), "--episodes", "3"], cwd=tmp_path)
    assert refused.returncode == 1 and "--trust sbx" in refused.stderr and not (run / "eval").exists()
    # rlexp evaluate with the run's final episodes and seed gives final_eval
    evaluated = rlexp_cli(["evaluate", str(run), "--episodes", "3", "--trust", "sbx"], cwd=tmp_path)
    assert evaluated.returncode == 0, evaluated.stderr[-2000:]
    record = json.loads((run / "eval" / "final_seed10000_n3_envs3.json").read_text())
    assert (record["mean"], record["std"]) == (summary["final_eval"]["mean"], summary["final_eval"]["std"])

    # continuing it takes backend=sbx: said in one line
    continued = rlexp_cli([*FAST, *overrides, "env.normalize=true", "trained_agent=run"], cwd=tmp_path)
    assert continued.returncode == 1
    assert stderr_lines(continued) == ["rlexp: error: trained_agent=run was trained with backend=sbx: add backend=sbx"]

    # export takes torch agents: refused in one line, nothing written
    exported = rlexp_cli(["export", str(run)], cwd=tmp_path)
    assert exported.returncode == 1
    assert stderr_lines(exported) == [
        f"rlexp export: error: {run}: trained with backend=sbx, whose JAX networks rlexp cannot export yet "
        "(ONNX and TorchScript export take SB3's torch agents: train with backend=sb3)"
    ]
    assert not (run / "export").exists()


@pytest.mark.parametrize(
    ("algo", "extra"),
    [
        pytest.param("ppo", ["n_timesteps=12000"], marks=pytest.mark.slow),  # JAX: in CI's slow run
        pytest.param("sac", ["n_timesteps=1200"], marks=pytest.mark.slow),  # with its replay buffer
    ],
)
def test_sbx_signal_checkpoints_and_resume_finishes_with_the_requested_steps(algo, extra, tmp_path):
    overrides, cls, _ = CASES[algo]
    args = [
        *overrides,
        *extra,
        "backend=sbx",
        "logger=csv",
        "callbacks.eval.n_evaluations=4",
        "callbacks.eval.n_episodes=2",
        "callbacks.eval.final_episodes=2",
    ]
    run = tmp_path / "run"
    with ended(start(tmp_path, args, stderr=subprocess.PIPE)) as proc:
        wait_for_file(run / "evaluations.npz", proc)  # a quarter of the steps done
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGTERM, err[-2000:]
    stopped = json.loads((run / "summary.json").read_text())
    assert stopped["status"] == "interrupted" and 0 < stopped["steps_done"] < stopped["target_steps"]
    cls.load(run / "resume" / "model.zip")  # a loadable sbx agent
    assert (run / "resume" / "replay_buffer.pkl").is_file() == (algo == "sac")

    resumed = rlexp_cli([*args, "hydra.run.dir=run"], cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    summary = json.loads((run / "summary.json").read_text())
    assert summary["status"] == "completed" and summary["backend"] == "sbx"
    assert summary["versions"]["sbx-rl"] and summary["versions"]["jax"]  # (resuming renews them)
    assert summary["resumed"][0]["step"] == stopped["steps_done"]
    assert summary["steps_done"] >= summary["n_timesteps"] and not (run / "resume").exists()
    assert len(np.load(run / "evaluations.npz")["timesteps"]) == 4  # the schedule went on


@pytest.mark.slow  # three trials through JAX: in CI's slow run
def test_sbx_ppo_search_completes_three_trials(tmp_path):
    args = ["-m", *SMALL_SEARCH, "backend=sbx", "hydra.sweeper.n_trials=3", "hydra.sweep.dir=sweep"]
    result = rlexp_cli(args, cwd=tmp_path, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    study = optuna.load_study(study_name="ppo-cartpole", storage=f"sqlite:///{tmp_path / 'sweep' / 'study.db'}")
    assert len(study.trials) == 3
    assert all(t.state in (TrialState.COMPLETE, TrialState.PRUNED) for t in study.trials)
    assert all(t.intermediate_values for t in study.trials)  # each reported its evaluations to the pruner
    best = json.loads((tmp_path / "sweep" / f"trial_{study.best_trial.number:04d}" / "summary.json").read_text())
    assert best["backend"] == "sbx" and best["final_eval"]["mean"] == study.best_value


@pytest.mark.slow  # three SAC trials: in CI's slow run
def test_sbx_sac_search_prunes_trials(tmp_path):
    args = [
        "-m",
        "hparams=search",
        *SAC,
        "backend=sbx",
        "n_timesteps=400",
        "algo.buffer_size=10000",
        "algo.train_freq=1",
        "++algo.policy_kwargs.net_arch=[64,64]",
        "callbacks.eval.n_evaluations=4",
        "callbacks.eval.n_episodes=1",
        "callbacks.eval.final_episodes=1",
        "hydra.sweeper.n_trials=3",
        "hydra/sweeper/pruner=none",
        "hydra.sweeper.pruner._target_=optuna.pruners.ThresholdPruner",
        "+hydra.sweeper.pruner.lower=1e9",
        "hydra.sweep.dir=sweep",
    ]
    result = rlexp_cli(args, cwd=tmp_path, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    study = optuna.load_study(study_name="sac-pendulum", storage=f"sqlite:///{tmp_path / 'sweep' / 'study.db'}")
    assert [t.state for t in study.trials] == [TrialState.PRUNED] * 3
    summary = json.loads((tmp_path / "sweep" / "trial_0000" / "summary.json").read_text())
    assert summary["status"] == "pruned" and summary["backend"] == "sbx" and summary["steps_done"] < 400


def test_an_algorithm_sbx_lacks_is_refused_before_a_run_dir_exists(tmp_path):
    result = rlexp_cli([*FAST, "algo=a2c", "backend=sbx"], cwd=tmp_path)
    assert result.returncode == 1
    assert stderr_lines(result) == [
        "rlexp: error: backend=sbx: sbx has no A2C (it trains ppo, dqn, sac, td3, ddpg, tqc, crossq); use backend=sb3"
    ]
    assert not (tmp_path / "outputs").exists()


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            [*SAC, "algo.target_update_interval=2"],
            "algo.target_update_interval=2: sbx's SAC does not take target_update_interval (backend=sbx; SB3's "
            "default 1 or backend=sb3)",
        ),
        (
            ["algo=ppo", "algo.target_kl=0.02"],
            "algo.target_kl=0.02: sets an adaptive learning rate in sbx instead of stopping an update early "
            "(backend=sbx; null or backend=sb3)",
        ),
        (
            ["algo=ppo", "algo.use_sde=true"],
            "algo.use_sde=true: sbx's PPO has no gSDE (backend=sbx; false or backend=sb3)",
        ),
        (
            ["algo=td3", "env=pendulum", "schedule@lr_schedule=linear"],
            "lr_schedule: sbx's TD3 keeps its learning rate constant (backend=sbx; schedule@lr_schedule=constant "
            "or backend=sb3)",
        ),
        (
            ["algo=dqn", "algo.policy_kwargs.net_arch=[64,32]"],
            "algo.policy_kwargs.net_arch=[64, 32]: sbx's DQN builds two hidden layers of one width (backend=sbx; "
            "e.g. [256, 256])",
        ),
        (
            ["algo=sac", "env=pendulum", "device=cpu"],
            "device=cpu: with backend=sbx, JAX chooses the device (its CUDA build on a GPU machine; "
            "JAX_PLATFORMS=cpu for the CPU); leave device=auto",
        ),
        (
            ["+algo.policy_kwargs.activation_fn={_target_: hydra.utils.get_class, path: torch.nn.Hardtanh}"],
            "algo.policy_kwargs.activation_fn=Hardtanh: no flax counterpart known to rlexp (backend=sbx takes "
            "ReLU, Tanh, ELU, LeakyReLU, GELU, SiLU, Sigmoid, SELU, Softplus)",
        ),
    ],
)
def test_what_sbx_does_not_take_is_refused_in_one_line(args, expected):
    from conftest import compose_cfg

    from rlexp.errors import ConfigError
    from rlexp.run import front_door

    overrides = [*FAST, *args, "backend=sbx"]
    cfg, choices = compose_cfg(overrides)
    with pytest.raises(ConfigError) as refused:
        front_door.check(cfg, choices, overrides)
    assert str(refused.value) == expected


def test_sbx_builds_sb3s_networks_with_flax_activations():
    import flax.linen as nn
    import torch
    from conftest import compose_cfg

    from rlexp.builders.backends import sbx_keywords

    cfg, _ = compose_cfg(["algo=sac", "backend=sbx"])
    keywords = {"policy": "MlpPolicy", "policy_kwargs": {"activation_fn": torch.nn.Tanh}}
    assert sbx_keywords(cfg.algo, sbx.SAC, keywords)["policy_kwargs"]["activation_fn"] is nn.tanh
    # where sbx's default network differs from SB3's, SB3's is built; a given one is kept
    cfg, _ = compose_cfg(["algo=dqn", "~tuned", "backend=sbx"])
    assert sbx_keywords(cfg.algo, sbx.DQN, {"policy_kwargs": {}})["policy_kwargs"] == {"net_arch": [64, 64]}
    cfg, _ = compose_cfg(["algo=td3", "env=pendulum", "~tuned", "backend=sbx"])
    assert sbx_keywords(cfg.algo, sbx.TD3, {"policy_kwargs": {}})["policy_kwargs"] == {"net_arch": [400, 300]}
    kept = sbx_keywords(cfg.algo, sbx.TD3, {"policy_kwargs": {"net_arch": [32, 32]}})
    assert kept["policy_kwargs"] == {"net_arch": [32, 32]}
