"""rlexp vs a plain Stable-Baselines3 script: same algorithm, hyperparameters, steps, seed, logging;
and rlexp's training diagnostics on (the default) vs off (diagnostics=none).

All run as fresh subprocesses, in turn (rlexp, rlexp diagnostics=none, plain, rlexp, ...) so that a
noisy shared machine slows them alike; per case it prints the median training throughputs, rlexp's over
the plain script's, and what the diagnostics cost (1 - on/off, in % of throughput).

    python benchmarks/throughput.py [--repeats 3] [--case ppo-cartpole] [--steps 50000]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

# the plain script: what a user would write by hand with SB3 for the same run
PLAIN = """
import json, sys, time, torch
from stable_baselines3 import {algo}
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.logger import configure
from stable_baselines3.common.utils import LinearSchedule
torch.set_num_threads(1)
out, steps = sys.argv[1], int(sys.argv[2])
env = make_vec_env("{env_id}", n_envs={n_envs}, seed=0)
model = {algo}("MlpPolicy", env, seed=0, device="cpu", **{kwargs})
model.set_logger(configure(out, ["csv", "tensorboard"]))
start = time.perf_counter()
model.learn(steps)
print(json.dumps({{"steps_per_second": model.num_timesteps / (time.perf_counter() - start)}}))
"""

# case -> (rlexp overrides, plain-script fill-ins); rlexp uses its tuned file, the plain script the same values
CASES = {
    "ppo-cartpole": (
        ["algo=ppo", "env=cartpole"],
        dict(
            algo="PPO",
            env_id="CartPole-v1",
            n_envs=8,
            kwargs="dict(n_steps=32, batch_size=256, gae_lambda=0.8, gamma=0.98, n_epochs=20, ent_coef=0.0, "
            "learning_rate=LinearSchedule(1e-3, 0.0, 1.0), clip_range=LinearSchedule(0.2, 0.0, 1.0))",
        ),
    ),
    "sac-pendulum": (
        ["algo=sac", "env=pendulum"],
        dict(algo="SAC", env_id="Pendulum-v1", n_envs=1, kwargs="dict(learning_rate=1e-3)"),
    ),
}
DEFAULT_STEPS = {"ppo-cartpole": 50_000, "sac-pendulum": 2_000}


def run_rlexp(overrides: list[str], steps: int, out: Path) -> float:
    """Training steps per second of an rlexp run (summary.json's, timed around learn() as the plain one)."""
    subprocess.run(
        [
            sys.executable,
            "-m",
            "rlexp",
            *overrides,
            f"n_timesteps={steps}",
            "callbacks=none",
            "callbacks.eval.final_episodes=1",
            "logger.formats=[csv,tensorboard]",
            f"hydra.run.dir={out}",
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    summary = json.loads((out / "summary.json").read_text())
    return summary["steps_per_second"]


def run_plain(fill: dict[str, object], steps: int, out: Path) -> float:
    result = subprocess.run(
        [sys.executable, "-c", PLAIN.format(**fill), str(out), str(steps)],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(result.stdout.strip().splitlines()[-1])["steps_per_second"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--case", choices=sorted(CASES), action="append")
    parser.add_argument("--steps", type=int, help="override the per-case number of steps")
    args = parser.parse_args()
    print(
        f"{'case':<14} {'steps':>7} {'rlexp steps/s':>14} {'plain SB3 steps/s':>18} {'ratio':>6} "
        f"{'diagnostics off':>16} {'diagnostics cost':>17}"
    )
    for case in args.case or sorted(CASES):
        overrides, fill = CASES[case]
        steps = args.steps or DEFAULT_STEPS[case]
        ours, bare, plain = [], [], []
        with tempfile.TemporaryDirectory() as tmp:
            for i in range(args.repeats):
                ours.append(run_rlexp(overrides, steps, Path(tmp) / f"rlexp{i}"))
                bare.append(run_rlexp([*overrides, "diagnostics=none"], steps, Path(tmp) / f"bare{i}"))
                plain.append(run_plain(fill, steps, Path(tmp) / f"plain{i}"))
        a, off, b = statistics.median(ours), statistics.median(bare), statistics.median(plain)
        print(
            f"{case:<14} {steps:>7} {a:>14.0f} {b:>18.0f} {a / b:>6.2f} {off:>16.0f} {1 - a / off:>16.1%}",
            flush=True,
        )


if __name__ == "__main__":
    main()
