"""The vector envs behind env.vec_env keep SB3's semantics: step by step the same observations, rewards,
dones, terminal observations, truncation flags and episode statistics as SB3's DummyVecEnv where the env
is the same (lean, numpy), SB3's contract where EnvPool's random streams differ; whole runs, evaluations
and refusals through the real `rlexp` command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import compose_cfg, rlexp_cli, stderr_lines

from rlexp.builders.envs import build_vec_env
from rlexp.cluster.cpus import usable_cpus

envpool = pytest.importorskip("envpool")


def _venv(overrides: list[str], seed: int, tmp: Path | None = None) -> Any:
    cfg, _ = compose_cfg(overrides)
    return build_vec_env(cfg.env, seed, tmp)


def _rollout(venv: Any, steps: int, seed: int = 0) -> list[tuple[Any, ...]]:
    """Each step's (obs, rewards, dones, infos) under a fixed random action sequence."""
    rng = np.random.default_rng(seed)
    venv.action_space.seed(seed)
    out = [(venv.reset(), None, None, None)]
    for _ in range(steps):
        if hasattr(venv.action_space, "n"):
            actions = rng.integers(0, venv.action_space.n, venv.num_envs)
        else:
            low, high = venv.action_space.low, venv.action_space.high
            actions = rng.uniform(low, high, (venv.num_envs, *venv.action_space.shape)).astype(np.float32)
        out.append(venv.step(actions))
    venv.close()
    return out


def _assert_same_steps(expected: list[tuple[Any, ...]], got: list[tuple[Any, ...]]) -> int:
    """Identical observations, rewards, dones and the infos SB3 reads; returns the number of episodes."""
    episodes = 0
    for step, (want, have) in enumerate(zip(expected, got, strict=True)):
        np.testing.assert_array_equal(want[0], have[0], err_msg=f"obs at step {step}")
        # the same layout too: torch multiplies a Fortran-ordered batch in another order, to other last bits
        assert want[0].strides == have[0].strides, f"obs layout at step {step}"
        if step == 0:
            continue
        np.testing.assert_array_equal(want[1], have[1], err_msg=f"rewards at step {step}")
        np.testing.assert_array_equal(want[2], have[2], err_msg=f"dones at step {step}")
        for i, (info, other) in enumerate(zip(want[3], have[3], strict=True)):
            assert info["TimeLimit.truncated"] == other["TimeLimit.truncated"], (step, i)
            assert ("terminal_observation" in info) == ("terminal_observation" in other) == bool(want[2][i])
            if want[2][i]:
                episodes += 1
                np.testing.assert_array_equal(info["terminal_observation"], other["terminal_observation"])
                assert info["episode"]["r"] == other["episode"]["r"] and info["episode"]["l"] == other["episode"]["l"]
    return episodes


@pytest.mark.parametrize(
    ("env", "kind", "steps"),
    [
        # CartPole cut at 40 steps: terminations and truncations both
        (["env=cartpole", "env.max_episode_steps=40"], "numpy", 3000),
        (["env=cartpole", "env.max_episode_steps=40"], "lean", 3000),
        (["env=pendulum"], "lean", 600),  # truncation only, continuous actions
    ],
)
def test_a_backend_steps_exactly_as_dummy_vec_env(env: list[str], kind: str, steps: int) -> None:
    base = ["algo=ppo", *env, "env.n_envs=4"]
    expected = _rollout(_venv([*base, "env.vec_env=dummy"], seed=3), steps)
    got = _rollout(_venv([*base, f"env.vec_env={kind}"], seed=3), steps)
    episodes = _assert_same_steps(expected, got)
    truncations = sum(info["TimeLimit.truncated"] for _, _, _, infos in expected[1:] for info in infos)
    assert episodes > 4 and truncations > 0  # both kinds of episode end were compared


@pytest.mark.slow
def test_a_numpy_cartpole_run_trains_dummy_vec_env_s_very_agent(tmp_path: Path) -> None:
    # TRPO's conjugate gradient amplifies a last bit of a forward pass: what the parity benchmark once caught
    from stable_baselines3.common.save_util import load_from_zip_file

    run = ["algo=trpo", "env=cartpole", "n_timesteps=2048", "torch_threads=1", "callbacks.eval.freq=0"]
    run += ["random_baseline.episodes=0", "callbacks.eval.final_episodes=1", "curves=false"]
    for kind in ("dummy", "numpy"):
        result = rlexp_cli([*run, f"env.vec_env={kind}", f"hydra.run.dir={kind}"], cwd=tmp_path)
        assert result.returncode == 0, result.stderr[-2000:]
    dummy, numpy_ = (load_from_zip_file(tmp_path / kind / "model.zip")[1]["policy"] for kind in ("dummy", "numpy"))
    assert dummy.keys() == numpy_.keys() and all(dummy[k].equal(numpy_[k]) for k in dummy)


def test_auto_is_numpy_for_cartpole_and_lean_otherwise() -> None:
    from rlexp.vecenvs.choice import resolved

    assert resolved(compose_cfg(["env=cartpole"])[0].env) == "numpy"
    assert resolved(compose_cfg(["env=pendulum", "algo=sac"])[0].env) == "lean"
    assert (
        resolved(
            compose_cfg(["env=cartpole", "+env.wrappers.t={_target_: gymnasium.wrappers.TimeAwareObservation}"])[0].env
        )
        == "lean"
    )
    assert resolved(compose_cfg(["env=cartpole", "env.vec_env=subproc"])[0].env, for_eval=True) == "lean"


def test_auto_steps_fewer_than_8_cartpoles_one_by_one() -> None:
    """A NumPy step costs as much as 7 CartPoles stepped in lean: auto takes numpy from 8 envs on, counting
    an evaluation's envs on their own; an explicit numpy is kept whatever the count."""
    from rlexp.vecenvs.choice import resolved

    few = compose_cfg(["env=cartpole", "env.n_envs=1"])[0].env
    assert [resolved(few), resolved(few, n_envs=7), resolved(few, for_eval=True, n_envs=8)] == ["lean", "lean", "numpy"]
    many = compose_cfg(["env=cartpole", "env.n_envs=8"])[0].env
    assert [resolved(many), resolved(many, for_eval=True, n_envs=3)] == ["numpy", "lean"]
    from rlexp.builders.envs import build_vec_env
    from rlexp.vecenvs.lean import LeanVecEnv

    three = build_vec_env(many, 0, None, for_eval=True, n_envs=3)  # (an evaluation of 3 episodes)
    assert isinstance(three.unwrapped, LeanVecEnv)
    three.close()
    assert resolved(compose_cfg(["env=cartpole", "env.n_envs=1", "env.vec_env=numpy"])[0].env) == "numpy"


def test_envpool_keeps_sb3_s_contract_on_cartpole(tmp_path: Path) -> None:
    """EnvPool's start states are its own; what SB3 reads of each step is SB3's: the reset observation on the
    step an episode ends, the last one in terminal_observation, TimeLimit.truncated exactly at the time
    limit, Monitor's episode statistics (and files), and env i seeded seed + i."""
    steps = _rollout(_venv(["env=cartpole", "env.n_envs=4", "env.max_episode_steps=30", "env.vec_env=envpool"],
                           seed=5, tmp=tmp_path), 2000)  # fmt: skip
    lengths = np.zeros(4, dtype=int)
    returns = np.zeros(4)
    ends = 0
    for obs, rewards, dones, infos in steps[1:]:
        lengths += 1
        returns += rewards
        for i in np.flatnonzero(dones):
            ends += 1
            info = infos[i]
            assert np.all(np.abs(obs[i]) <= 0.05)  # a fresh start state (CartPole's reset bounds)
            assert not np.all(np.abs(info["terminal_observation"]) <= 0.05)
            assert info["TimeLimit.truncated"] == (lengths[i] == 30)
            assert info["episode"]["l"] == lengths[i] and info["episode"]["r"] == returns[i]
            lengths[i], returns[i] = 0, 0.0
        assert all("terminal_observation" not in infos[i] for i in np.flatnonzero(~dones))
    assert ends > 50
    rows = (tmp_path / "2.monitor.csv").read_text().splitlines()
    assert rows[1] == "r,l,t" and len(rows) > 10  # SB3's monitor format, one file per env
    # env i of a pool seeded s starts as env 0 of a pool seeded s + i
    first = _venv(["env=cartpole", "env.n_envs=3", "env.vec_env=envpool"], seed=7).reset()
    third = _venv(["env=cartpole", "env.n_envs=1", "env.vec_env=envpool"], seed=9).reset()
    np.testing.assert_array_equal(first[2], third[0])


def test_envpool_atari_ends_episodes_at_game_over_with_the_unclipped_score() -> None:
    """Under AtariWrapper's terminal_on_life_loss a lost life is a done (a reset of SB3's) but not the end of
    Monitor's episode: that is the game's end, with its unclipped score, as SB3's Monitor records it."""
    venv = _venv(["algo=ppo", "env=atari", "env.id=BreakoutNoFrameskip-v4", "env.n_envs=2",
                  "env.vec_env=envpool"], seed=0)  # fmt: skip
    assert venv.observation_space.shape == (4, 84, 84)  # 4 grey 84x84 frames, channels-first
    steps = _rollout(venv, 1500)
    dones = sum(int(step[2].sum()) for step in steps[1:])
    episodes = [info["episode"] for step in steps[1:] for info in step[3] if "episode" in info]
    assert episodes and dones >= 5 * len(episodes)  # Breakout's 5 lives: a done per life, one episode per game
    assert all(set(np.unique(step[1])) <= {-1.0, 0.0, 1.0} for step in steps[1:])  # clipped rewards to learn on


def test_envpool_mujoco_steps_as_gymnasium_within_float_tolerance() -> None:
    """Hopper-v5 from a noise-free start: the same observations and rewards as gymnasium's (within 1e-5:
    MuJoCo builds differ), the same terminations and the same time-limit truncation."""
    base = ["algo=sac", "env=hopper", "env.n_envs=2", "+env.kwargs.reset_noise_scale=0.0", "env.max_episode_steps=60"]
    expected = _rollout(_venv([*base, "env.vec_env=dummy"], seed=0), 300)
    got = _rollout(_venv([*base, "env.vec_env=envpool"], seed=0), 300)
    for step, (want, have) in enumerate(zip(expected, got, strict=True)):
        np.testing.assert_allclose(want[0], have[0], atol=1e-5, err_msg=f"obs at step {step}")
        if step:
            np.testing.assert_allclose(want[1], have[1], atol=1e-5, err_msg=f"rewards at step {step}")
            np.testing.assert_array_equal(want[2], have[2], err_msg=f"dones at step {step}")
            assert [i["TimeLimit.truncated"] for i in want[3]] == [i["TimeLimit.truncated"] for i in have[3]]


FAST_PPO = ["algo=ppo", "env=cartpole", "n_timesteps=2048", "callbacks.eval.n_episodes=3",
            "callbacks.eval.final_episodes=4", "logger=csv"]  # fmt: skip


@pytest.mark.parametrize("kind", ["lean", "numpy", "envpool"])
def test_a_run_through_a_backend_trains_saves_and_evaluates_as_rlexp_evaluate_does(kind: str, tmp_path: Path) -> None:
    result = rlexp_cli([*FAST_PPO, f"env.vec_env={kind}", "hydra.run.dir=run"], tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert f"vector env: 8 x CartPole-v1, {kind}:" in result.stdout
    run = tmp_path / "run"
    summary = json.loads((run / "summary.json").read_text())
    assert len(list((run / "monitor" / "train").glob("*.monitor.csv"))) == 8
    assert summary["torch_threads"] == 1  # a small MLP keeps one thread, whichever env steps it
    evaluated = rlexp_cli(["evaluate", str(run), "--episodes", "4"], tmp_path)
    assert evaluated.returncode == 0, evaluated.stderr[-2000:]
    assert f"{summary['final_eval']['mean']:.2f}" in evaluated.stdout
    if kind != "envpool":  # the same random streams as SB3's envs: the very run of env.vec_env=dummy
        dummy = rlexp_cli([*FAST_PPO, "env.vec_env=dummy", "hydra.run.dir=dummy"], tmp_path)
        assert dummy.returncode == 0, dummy.stderr[-2000:]
        assert json.loads((tmp_path / "dummy" / "summary.json").read_text())["final_eval"] == summary["final_eval"]


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ["env=pendulum", "algo=sac", "env.vec_env=numpy"],
            "env.vec_env=numpy: gymnasium ships only CartPole-v0 and CartPole-v1 NumPy-vectorized, not Pendulum-v1",
        ),
        (
            ["env.id=HopperBulletEnv-v0", "algo=ppo", "env.vec_env=envpool"],
            "env.vec_env=envpool: EnvPool has no HopperBulletEnv-v0 (env.vec_env=auto steps it in this process)",
        ),
        (
            [
                "env=cartpole",
                "env.vec_env=envpool",
                "+env.wrappers.t={_target_: gymnasium.wrappers.TimeAwareObservation}",
            ],
            "env.wrappers.t: EnvPool cannot take it: EnvPool steps its envs in C++, without gymnasium wrappers",
        ),
        (
            ["env=cartpole", "env.vec_env=envpool", "+env.kwargs.sutton_barto_reward=true"],
            "env.kwargs.sutton_barto_reward: EnvPool cannot take it for CartPole-v1 (env.vec_env=lean takes it)",
        ),
        (["env=cartpole", "env.vec_env=fast"], "env.vec_env"),
    ],
)
def test_a_backend_that_cannot_step_the_env_is_refused_in_one_line(args: list[str], line: str, tmp_path: Path) -> None:
    result = rlexp_cli(args, tmp_path)
    assert result.returncode == 1
    errors = [x for x in stderr_lines(result) if x.startswith("rlexp: error")]
    assert len(errors) == 1 and line in errors[0], result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "outputs").exists()  # no run dir for a run that never started


@pytest.mark.parametrize("waits", ["PASSIVE", pytest.param("ACTIVE", marks=pytest.mark.slow)])
def test_a_cnn_on_envpool_takes_every_cpu_where_torch_s_threads_sleep(waits: str, tmp_path: Path) -> None:
    """torch takes turns with EnvPool's pool on every CPU, with its threads sleeping at their barriers
    (rlexp asks for that before torch loads); a user's spinning threads keep one."""
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if waits == "ACTIVE":
        env["OMP_WAIT_POLICY"] = "ACTIVE"
    args = ["algo=ppo", "env=atari", "env.vec_env=envpool", "env.n_envs=2", "n_timesteps=64", "algo.n_steps=32",
            "callbacks.eval.freq=0", "callbacks.eval.final_episodes=1", "env.max_episode_steps=400", "logger=csv",
            "curves=false", "hydra.run.dir=run"]  # fmt: skip
    result = subprocess.run(
        [sys.executable, "-m", "rlexp", *args], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr[-2000:]
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["torch_threads"] == (usable_cpus() if waits == "PASSIVE" else 1)


def test_envpool_without_its_extra_names_the_extra(tmp_path: Path) -> None:
    code = ("import sys; sys.modules['envpool'] = None; sys.argv = ['rlexp', 'env.vec_env=envpool']; "
            "from rlexp.cli import console; console()")  # fmt: skip
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode == 1
    assert stderr_lines(result)[-1] == (
        "rlexp: error: env.vec_env=envpool needs EnvPool: pip install 'rlexp[envpool]' (or env.vec_env=auto)"
    )
    assert not (tmp_path / "outputs").exists()


def test_envpool_honours_every_seed_call_and_declares_gymnasium_s_spaces() -> None:
    """SB3's seed() before a reset gives the same start however far the envs went; the spaces are the
    gymnasium env's (EnvPool's MuJoCo actions are float64, its Box2D observations unbounded), so that an
    agent moves between backends."""
    venv = _venv(["env=cartpole", "env.n_envs=2", "env.vec_env=envpool"], seed=0)
    venv.seed(5)
    first = venv.reset()
    for _ in range(5):
        venv.step(np.zeros(2, dtype=np.int64))
    venv.seed(5)
    np.testing.assert_array_equal(venv.reset(), first)
    venv.close()
    import gymnasium as gym

    for overrides, env_id in (
        (["algo=sac", "env=hopper"], "Hopper-v5"),
        (["algo=ppo", "env=lunarlander"], "LunarLander-v3"),
    ):
        venv = _venv([*overrides, "env.vec_env=envpool", "env.normalize=false"], seed=0)
        env = gym.make(env_id)
        assert (venv.observation_space, venv.action_space) == (env.observation_space, env.action_space)
        assert venv.reset().dtype == env.observation_space.dtype
        venv.close()


def test_envpool_atari_follows_gymnasium_s_id_and_counts_the_time_limit_in_frames() -> None:
    from rlexp.vecenvs.envpool_env import atari_config

    cfg, _ = compose_cfg(["algo=ppo", "env=atari", "env.id=PongNoFrameskip-v0"])
    wrappers = {"atari": {"_target_": "stable_baselines3.common.atari_wrappers.AtariWrapper"}}
    assert atari_config(cfg.env, wrappers)["repeat_action_probability"] == 0.25  # v0 ids are sticky
    cfg, _ = compose_cfg(["algo=ppo", "env=atari", "env.max_episode_steps=400"])
    from rlexp.builders.envs import env_kwargs
    from rlexp.vecenvs.choice import envpool_options

    _, options = envpool_options(cfg.env, env_kwargs(cfg.env, for_eval=False))
    assert options["max_episode_steps"] == 100 and options["repeat_action_probability"] == 0.0


def test_an_envpool_run_whose_gymnasium_env_cannot_be_made_is_refused_before_its_run_dir(tmp_path: Path) -> None:
    """The random baseline and the spaces come from the gymnasium env: its missing package is named up front."""
    code = ("import sys; sys.modules['mujoco'] = None; sys.argv = ['rlexp', 'algo=sac', 'env=hopper', "
            "'env.vec_env=envpool']; from rlexp.cli import console; console()")  # fmt: skip
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode == 1
    assert "pip install 'rlexp[mujoco]'" in stderr_lines(result)[-1]
    assert not (tmp_path / "outputs").exists()
