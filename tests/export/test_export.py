"""`rlexp export` on real short runs, through the real command: each exported file read back by its own
runtime (onnxruntime, torch.jit.load) and compared here with SB3's own ``predict`` on fresh
observations, apart from the command's parity check; the export guide's torch-free example run where torch and
SB3 cannot be imported."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import gymnasium as gym
import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from conftest import lazy_runs, rlexp_cli, stderr_lines
from hydra.utils import get_class
from omegaconf import OmegaConf
from stable_baselines3.common.vec_env import DummyVecEnv, VecFrameStack, VecNormalize

from rlexp.commands import run_verb
from rlexp.errors import ConfigError

pytestmark = pytest.mark.xdist_group("export_runs")  # one worker trains the runs once

RUNS = {
    "ppo_cartpole": ["algo=ppo", "env=cartpole", "algo.n_steps=32"],
    "ppo_pendulum_normalized": ["algo=ppo", "env=pendulum", "env.normalize=true", "algo.n_steps=64"],
    "sac_pendulum_normalized": ["algo=sac", "env=pendulum", "env.normalize=true", "algo.learning_starts=100"],
    "td3_pendulum": ["algo=td3", "env=pendulum", "algo.learning_starts=100"],
    "dqn_cartpole": ["algo=dqn", "env=cartpole", "algo.learning_starts=100"],
    "qrdqn_cartpole": ["algo=qrdqn", "env=cartpole", "algo.learning_starts=100"],
    "recurrent_ppo_cartpole": ["algo=recurrent_ppo", "env=cartpole", "algo.n_steps=32"],
    "ppo_cartpole_frame_stack": ["algo=ppo", "env=cartpole", "algo.n_steps=32", "env.frame_stack=3"],
}
EXPORT_GUIDE = (Path(__file__).parents[2] / "docs" / "guides" / "export.md").read_text()


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Callable[[str], Path]:
    return lazy_runs(tmp_path_factory, RUNS, ["seed=5", "callbacks.eval.final_episodes=3"])


def _observations(env_id: str, n: int, stack: int = 0) -> np.ndarray:
    """Observations of the raw env under random actions (stacked as VecFrameStack stacks them)."""
    env = gym.make(env_id)
    env.action_space.seed(1)
    obs, _ = env.reset(seed=123)
    frames = [np.zeros_like(obs)] * (stack - 1) + [obs]
    rows = []
    for _ in range(n):
        rows.append(np.concatenate(frames[-stack:]) if stack else obs)
        obs, _, terminated, truncated, _ = env.step(env.action_space.sample())
        if terminated or truncated:
            obs, _ = env.reset()
            frames = [np.zeros_like(obs)] * (stack - 1)
        frames.append(obs)
    return np.stack(rows).astype(np.float32)


def _sb3_actions(run_dir: Path, obs: np.ndarray) -> tuple[np.ndarray, str]:
    """SB3's own answer, the run's VecNormalize applied as SB3 applies it."""
    cfg = OmegaConf.load(run_dir / "config.yaml")
    model = get_class(cfg.algo._target_).load(run_dir / "model.zip", device="cpu")
    if (run_dir / "vecnormalize.pkl").is_file():
        norm = VecNormalize.load(str(run_dir / "vecnormalize.pkl"), DummyVecEnv([lambda: gym.make(cfg.env.id)]))
        obs = norm.normalize_obs(obs)
    start = np.ones(len(obs), dtype=bool)
    actions, _ = model.predict(obs, episode_start=start, deterministic=True)
    return actions, cfg.env.id


def _inputs(policy: dict, obs: np.ndarray) -> list[np.ndarray]:
    """The graph's inputs for a batch of first steps (RecurrentPPO: zero state, episode starting)."""
    inputs = [obs]
    if policy["recurrent"]:
        shape = (policy["recurrent"]["num_layers"], len(obs), policy["recurrent"]["hidden_size"])
        inputs += [np.zeros(shape, np.float32), np.zeros(shape, np.float32), np.ones(len(obs), np.float32)]
    return inputs


@pytest.mark.parametrize(
    "name", ["ppo_cartpole", *(pytest.param(n, marks=pytest.mark.slow) for n in RUNS if n != "ppo_cartpole")]
)
def test_export_does_what_the_agent_does(name, runs):
    run_dir = runs(name)
    result = rlexp_cli(["export", str(run_dir), "--quantize", "int8"], cwd=run_dir)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stderr.strip() == "", result.stderr[-3000:]  # the exporters' chatter is not the user's
    export = run_dir / "export"
    umask = os.umask(0)
    os.umask(umask)
    assert export.stat().st_mode & 0o777 == 0o777 & ~umask  # a plain dir, not mkdtemp's private one
    policy = json.loads((export / "policy.json").read_text())
    parity = json.loads((export / "parity.json").read_text())
    assert set(parity["checks"]) == {"onnxruntime", "torch.jit.load", "onnxruntime_int8"}
    assert all(parity["checks"][runtime]["passed"] for runtime in ("onnxruntime", "torch.jit.load"))
    int8 = parity["checks"]["onnxruntime_int8"]  # reported, not required
    assert int8["required"] is False and "max_abs_diff" in int8["outputs"]["action"]
    ops = {node.op_type for node in onnx.load(str(export / "policy.int8.onnx")).graph.node}
    assert ops & {"DynamicQuantizeLinear", "MatMulInteger"}, ops
    assert parity["episodes"] == 5 and parity["observations"] >= 5
    assert "matches" in result.stdout and str(export) in result.stdout

    stack = int(policy["env"]["frame_stack"])
    obs = _observations(policy["env"]["id"], 64, stack)
    expected, env_id = _sb3_actions(run_dir, obs)
    assert policy["env"]["id"] == env_id and policy["inputs"][0]["shape"] == ["batch", *obs.shape[1:]]
    session = ort.InferenceSession(str(export / "policy.onnx"))
    names = [i.name for i in session.get_inputs()]
    assert names == [t["name"] for t in policy["inputs"]]
    by_onnx = session.run(None, dict(zip(names, _inputs(policy, obs), strict=True)))[0]
    with torch.no_grad():
        out = torch.jit.load(str(export / "policy.pt"))(*map(torch.as_tensor, _inputs(policy, obs)))
    by_torchscript = (out[0] if isinstance(out, tuple) else out).numpy()
    for got in (by_onnx, by_torchscript, session.run(None, dict(zip(names, _inputs(policy, obs[:1]), strict=True)))[0]):
        assert got.shape == expected[: len(got)].shape
        if policy["env"]["action_space"]["type"] == "Discrete":
            assert got.dtype == np.int64 and (got == expected[: len(got)]).all()
        else:
            np.testing.assert_allclose(got, expected[: len(got)], atol=1e-5, rtol=0)
    if policy["normalization"]:  # the statistics are the run's, inside the graph
        saved = VecNormalize.load(str(run_dir / "vecnormalize.pkl"), DummyVecEnv([lambda: gym.make(env_id)]))
        assert policy["normalization"]["inputs"]["obs"]["mean"] == pytest.approx(saved.obs_rms.mean.tolist())
        low, high = policy["env"]["action_space"]["low"], policy["env"]["action_space"]["high"]
        assert (low, high) == (-2.0, 2.0)


def _blocked(tmp_path: Path, *modules: str) -> dict[str, str]:
    """An environment in which ``modules`` cannot be imported: each shadowed by one that refuses."""
    blocker = tmp_path / "blocked"
    for module in modules:
        (blocker / module).mkdir(parents=True)
        (blocker / module / "__init__.py").write_text(f"raise ImportError('{module} is blocked in this test')\n")
    return {"PYTHONPATH": os.pathsep.join([str(blocker), os.environ.get("PYTHONPATH", "")])}


def test_the_export_dirs_runner_plays_the_final_evaluation_without_torch_from_anywhere(runs, tmp_path):
    run_dir = runs("ppo_cartpole")
    if not (run_dir / "export" / "policy.json").is_file():
        assert rlexp_cli(["export", str(run_dir), "--format", "onnx"], cwd=run_dir).returncode == 0
    moved = tmp_path / "shipped"
    shutil.copytree(run_dir / "export", moved)  # the export dir alone, somewhere else
    script = moved / "run_policy.py"
    assert "import torch" not in script.read_text() and "stable_baselines3" not in script.read_text()
    assert "<!-- include src/rlexp/export/run_policy.py -->" in EXPORT_GUIDE  # the guide shows this very file
    env = {**os.environ, **_blocked(tmp_path, "torch", "stable_baselines3", "sb3_contrib", "rlexp")}
    probe = subprocess.run([sys.executable, "-c", "import torch"], env=env, capture_output=True, text=True)
    assert probe.returncode != 0 and "blocked" in probe.stderr
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    final = json.loads((run_dir / "summary.json").read_text())["final_eval"]
    assert done.stdout.strip() == f"mean return {final['mean']:.2f} over {final['episodes']} episodes"


def test_a_failed_parity_check_keeps_the_earlier_export(runs, monkeypatch, capsys):
    from rlexp.export import graph

    run_dir = runs("ppo_cartpole")
    out = run_dir / "kept"
    with pytest.raises(SystemExit) as done:
        run_verb(["export", str(run_dir), "--format", "onnx", "--out", str(out)])
    assert done.value.code == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    to_env = graph.PolicyGraph._to_env
    monkeypatch.setattr(graph.PolicyGraph, "_to_env", lambda self, a: 1 - to_env(self, a))  # every action wrong
    capsys.readouterr()
    with pytest.raises(SystemExit) as done:
        run_verb(["export", str(run_dir), "--format", "onnx", "--out", str(out)])
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert done.value.code == 1 and len(err) == 1, err
    assert "policy.onnx run by onnxruntime does not match the SB3 agent: action differs by up to 1" in err[0]
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert [p.name for p in run_dir.iterdir() if p.name.startswith(".kept")] == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--format", "tflite"], "invalid choice: 'tflite'"),
        (["--format", "torchscript", "--quantize", "int8"], "--quantize int8 quantizes the ONNX file"),
        (["--quantize", "int4"], "invalid choice: 'int4'"),
        (["--agent", "step_77"], "--agent step_77:"),
        (["--agent", "worst"], "--agent worst: not final, best or step_<N>"),
        (["--check-episodes", "0"], "0 must be >= 1"),
        (["--out", "."], "it is replaced whole"),
        (["--out", "config.yaml"], "is a file"),
        (["--out", "config.yaml/x"], "config.yaml is a file"),
    ],
)
def test_bad_arguments_are_refused_in_one_line(args, message, runs, capsys, monkeypatch):
    run_dir = runs("ppo_cartpole")
    before = sorted(p.name for p in run_dir.iterdir())
    monkeypatch.chdir(run_dir)
    with pytest.raises(SystemExit) as done:
        run_verb(["export", str(run_dir), *args])
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert done.value.code == 1 and len(err) == 1 and message in err[0], err
    assert sorted(p.name for p in run_dir.iterdir()) == before


def test_no_such_run(tmp_path, capsys):
    with pytest.raises(SystemExit) as done:
        run_verb(["export", str(tmp_path / "nowhere")])
    assert done.value.code == 1 and "nowhere: no such run dir or model .zip" in capsys.readouterr().err


def test_a_missing_extra_is_named(tmp_path, runs):
    run_dir = runs("ppo_cartpole")
    result = rlexp_cli(
        ["export", str(run_dir), "--out", str(tmp_path / "x")], cwd=tmp_path, env=_blocked(tmp_path, "onnxruntime")
    )
    assert result.returncode == 1 and len(stderr_lines(result)) == 1
    assert "needs the export extra (onnxruntime is missing): pip install 'rlexp[export]'" in result.stderr
    assert not (tmp_path / "x").exists()


def test_frame_stack_over_normalization_is_refused():
    from rlexp.export.graph import EnvLayers

    venv = VecFrameStack(VecNormalize(DummyVecEnv([lambda: gym.make("CartPole-v1")])), n_stack=2)
    with pytest.raises(ConfigError, match=r"env\.frame_stack with env\.normalize cannot be exported"):
        EnvLayers.of(venv)


def test_actions_are_clipped_or_unsquashed_and_observations_clipped():
    """What little training cannot show: actions beyond the bounds, observations beyond clip_obs."""
    from stable_baselines3 import PPO, SAC

    from rlexp.export.graph import build_graph

    venv = VecNormalize(DummyVecEnv([lambda: gym.make("Pendulum-v1")]), clip_obs=0.5)
    ppo = build_graph(PPO("MlpPolicy", venv, device="cpu"), venv).module
    got = ppo._to_env(torch.tensor([[5.0], [-5.0], [0.25]]))
    assert got.tolist() == [[2.0], [-2.0], [0.25]]  # a Gaussian mean is clipped to the Box
    sac = build_graph(SAC("MlpPolicy", venv, device="cpu"), venv).module
    assert sac._to_env(torch.tensor([[1.0], [-1.0], [0.0], [0.5]])).tolist() == [[2.0], [-2.0], [0.0], [1.0]]
    obs = torch.tensor([[100.0, -100.0, 0.0]])
    expected = venv.normalize_obs(obs.numpy())
    assert np.abs(expected).max() == 0.5
    np.testing.assert_allclose(sac._prepare(None, obs).numpy(), expected, atol=1e-7)
