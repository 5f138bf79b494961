"""Latency of an exported policy in onnxruntime against SB3 ``predict`` (through VecNormalize, as the
agent acts) on the same observations, at batch 1 and batch 256, one thread each, measured in
alternating rounds in one process (this machine is shared: the ratios are what to read).

Trains two short runs (PPO CartPole, SAC Pendulum with VecNormalize) and exports them with `rlexp export`.

    python benchmarks/export_latency.py [--rounds 7]
"""

from __future__ import annotations

import argparse
import functools
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import gymnasium as gym
import numpy as np

RUNS = {
    "PPO CartPole-v1": ["algo=ppo", "env=cartpole", "n_timesteps=2000"],
    "SAC Pendulum-v1 (VecNormalize)": ["algo=sac", "env=pendulum", "env.normalize=true", "n_timesteps=300"],
}
QUIET = ["logger=csv", "logger.verbose=0", "curves=false", "callbacks.eval.final_episodes=1"]


def rlexp(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "rlexp", *args], check=True, capture_output=True)


def per_call(fn: Callable[[], object], seconds: float = 0.3) -> float:
    """Seconds per call of ``fn``, over as many calls as fit in about ``seconds``."""
    fn()
    n, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        fn()
        n += 1
    return elapsed / n


def observations(env_id: str, n: int) -> np.ndarray:
    env = gym.make(env_id)
    env.action_space.seed(0)
    obs, _ = env.reset(seed=0)
    rows = []
    for _ in range(n):
        rows.append(obs)
        obs, _, terminated, truncated, _ = env.step(env.action_space.sample())
        if terminated or truncated:
            obs, _ = env.reset()
    return np.stack(rows).astype(np.float32)


def latencies(run: Path, rounds: int, threads: int = 1) -> list[tuple[int, float, float]]:
    """(batch, SB3 seconds per call, onnxruntime seconds per call), medians over alternating rounds."""
    import onnxruntime as ort
    from hydra.utils import get_class
    from omegaconf import OmegaConf
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = threads
    cfg = OmegaConf.load(run / "config.yaml")
    model = get_class(cfg.algo._target_).load(run / "model.zip", device="cpu")
    norm = None
    if (run / "vecnormalize.pkl").is_file():
        norm = VecNormalize.load(str(run / "vecnormalize.pkl"), DummyVecEnv([functools.partial(gym.make, cfg.env.id)]))
    session = ort.InferenceSession(str(run / "export" / "policy.onnx"), options)

    def sb3(x: np.ndarray) -> object:  # as the agent acts: VecNormalize in Python, then the policy
        return model.predict(norm.normalize_obs(x) if norm else x, deterministic=True)

    def onnx(x: np.ndarray) -> object:
        return session.run(None, {"obs": x})

    obs, out = observations(cfg.env.id, 256), []
    for batch in (1, 256):
        times: dict[str, list[float]] = {"sb3": [], "onnx": []}
        for _ in range(rounds):  # alternating: both see the same load
            times["sb3"].append(per_call(functools.partial(sb3, obs[:batch])))
            times["onnx"].append(per_call(functools.partial(onnx, obs[:batch])))
        out.append((batch, float(np.median(times["sb3"])), float(np.median(times["onnx"]))))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)
    print(f"{'policy':<32} {'batch':>5} {'SB3 predict':>12} {'onnxruntime':>12} {'SB3 / ORT':>10}")
    with tempfile.TemporaryDirectory() as tmp:
        for name, overrides in RUNS.items():
            run = Path(tmp) / name.split()[0]
            rlexp(*overrides, *QUIET, f"hydra.run.dir={run}")
            rlexp("export", str(run), "--format", "onnx")
            for batch, sb3_s, onnx_s in latencies(run, args.rounds):
                print(f"{name:<32} {batch:>5} {sb3_s * 1e6:>10.0f}us {onnx_s * 1e6:>10.0f}us {sb3_s / onnx_s:>9.1f}x")


if __name__ == "__main__":
    main()
