"""Plays a run's final evaluation again with its exported ONNX policy, with onnxruntime, NumPy and Gymnasium
only (no torch, no SB3, no rlexp), and prints its mean return. ``rlexp export`` writes this file into each
export dir:

    python outputs/ppo-cartpole/latest/export/run_policy.py

Same env, seeds and episodes as the run's final evaluation, for a run with deterministic evaluation, one
eval env per episode (the default up to 16 episodes: policy.json's ``evaluation.n_envs`` equals
``episodes``) and no ``env.wrappers`` or frame stack (policy.json lists them; apply them yourself).
"""

import json
import sys
from pathlib import Path


def main(export: Path) -> None:
    import gymnasium as gym
    import numpy as np
    import onnxruntime as ort

    policy = json.loads((export / "policy.json").read_text())
    session = ort.InferenceSession(str(export / "policy.onnx"))
    env = gym.make(policy["env"]["id"], **policy["env"]["kwargs"])
    episodes, seed = policy["evaluation"]["episodes"], policy["evaluation"]["seed"]
    returns = []
    for i in range(episodes):  # episode i: the first of eval env i, reset with seed + i
        (obs, _), total, done = env.reset(seed=seed + i), 0.0, False
        while not done:
            action = np.asarray(session.run(None, {"obs": obs[None]})[0])[0]  # the one output: the actions
            obs, reward, terminated, truncated, _ = env.step(action)
            total, done = total + float(reward), terminated or truncated
        returns.append(total)
    print(f"mean return {np.mean(returns):.2f} over {len(returns)} episodes")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent)  # (its export dir)
