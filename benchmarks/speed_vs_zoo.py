"""Whole-process wall time of rlexp against RL Zoo's train.py and a plain Stable-Baselines3 script on equal
work: same algorithm, tuned values, steps, seed, one torch thread each, and the same evaluation schedule
(every 10,000 steps, 5 episodes; rlexp and the plain script also end with a final 10-episode evaluation,
which the zoo does not do; the zoo evaluates on one env, rlexp and the plain script on one env per
episode, side by side). The SAC case also runs rlexp with backend=sbx (JAX), with a compilation cache of
its own that the first repeat fills (its time is printed apart: later runs of a user reuse theirs).

The commands run as fresh processes, in turn (rlexp, zoo, plain, ... then again) so that a noisy shared
machine slows them alike; per case it prints the median seconds of each and their ratios, and the final
evaluations of the SB3 and sbx runs (seed 0).

    python benchmarks/speed_vs_zoo.py [--repeats 3] [--case ppo-cartpole] [--zoo-python PATH]

Cases: ppo-cartpole (50,000 steps), sac-pendulum (3,000), ppo-cartpole-one-rollout (256 steps: what a run
costs besides learning).

Needs rl_zoo3 (`pip install rl_zoo3`; --zoo-python: a Python that has it) and the sbx extra.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from throughput import CASES as TUNED  # (benchmarks/ is on the path of a script run from it)

EVAL_FREQ, EVAL_EPISODES, FINAL_EPISODES = 10_000, 5, 10

# the plain script: what a user would write by hand with SB3 to train and evaluate as rlexp does by default
PLAIN = """
import sys, torch
from stable_baselines3 import {algo}
from stable_baselines3.common.callbacks import EvalCallback
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.logger import configure
from stable_baselines3.common.utils import LinearSchedule
torch.set_num_threads(1)
out, steps = sys.argv[1], int(sys.argv[2])
env = make_vec_env("{env_id}", n_envs={n_envs}, seed=0, monitor_dir=out + "/monitor")
model = {algo}("MlpPolicy", env, seed=0, device="cpu", **{kwargs})
model.set_logger(configure(out, ["csv", "tensorboard"]))
eval_env = make_vec_env("{env_id}", n_envs={eval_episodes}, seed=10_000)
model.learn(steps, callback=EvalCallback(eval_env, n_eval_episodes={eval_episodes}, eval_freq={eval_freq} // {n_envs},
                                         log_path=out, best_model_save_path=out + "/best", verbose=0))
model.save(out + "/model.zip")
final_env = make_vec_env("{env_id}", n_envs={final_episodes}, seed=10_000)
print(evaluate_policy(model, final_env, n_eval_episodes={final_episodes}, deterministic=True))
"""

# case -> steps, rlexp overrides, zoo arguments, plain-script fill-ins (throughput.py's: the values of rlexp's
# tuned file, which are the zoo's own)
CASES = {
    "ppo-cartpole": (
        50_000,
        ["algo=ppo", "env=cartpole"],
        ["--algo", "ppo", "--env", "CartPole-v1"],
        TUNED["ppo-cartpole"][1],
    ),
    "sac-pendulum": (
        3_000,
        ["algo=sac", "env=pendulum"],
        ["--algo", "sac", "--env", "Pendulum-v1"],
        TUNED["sac-pendulum"][1],
    ),
}
# start-up and fixed cost: one rollout of the PPO case (8 envs x 32 steps), then evaluation and saving
CASES["ppo-cartpole-one-rollout"] = (256, *CASES["ppo-cartpole"][1:])
SBX_CASES = ("sac-pendulum",)


def _timed(command: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    env = {**os.environ, "JAX_COMPILATION_CACHE_DIR": str(cwd / "jax_cache")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as an install runs: each package's bytecode cached
    subprocess.run(command, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    return time.perf_counter() - start


def zoo_train(python: str, zoo: list[str], eval_freq: int, eval_episodes: int, out: Path) -> list[str]:
    """RL Zoo's train.py on one torch thread, seed 0, with this evaluation schedule, writing to ``out``."""
    evaluation = ["--eval-freq", str(eval_freq), "--eval-episodes", str(eval_episodes)]
    return [python, "-m", "rl_zoo3.train", *zoo, "--num-threads", "1", "--seed", "0", *evaluation, "-f", str(out)]


def commands(case: str, steps: int, out: Path, zoo_python: str) -> dict[str, list[str]]:
    _, overrides, zoo, fill = CASES[case]
    rlexp = [sys.executable, "-m", "rlexp", *overrides, f"n_timesteps={steps}", "torch_threads=1", "seed=0"]
    found = {
        "rlexp": [*rlexp, f"hydra.run.dir={out / 'rlexp'}"],
        "zoo": [*zoo_train(zoo_python, zoo, EVAL_FREQ, EVAL_EPISODES, out / "zoo"), "-n", str(steps)],
        "plain": [
            sys.executable,
            "-c",
            PLAIN.format(**fill, eval_episodes=EVAL_EPISODES, eval_freq=EVAL_FREQ, final_episodes=FINAL_EPISODES),
            str(out / "plain"),
            str(steps),
        ],
    }
    if case in SBX_CASES:
        found["rlexp sbx"] = [*rlexp, "backend=sbx", f"hydra.run.dir={out / 'sbx'}"]
    return found


def final_eval(run_dir: Path) -> float:
    return json.loads((run_dir / "summary.json").read_text())["final_eval"]["mean"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--case", choices=sorted(CASES), action="append")
    parser.add_argument("--steps", type=int, help="override the per-case number of steps")
    parser.add_argument("--zoo-python", default=sys.executable, help="a Python with rl_zoo3 installed")
    args = parser.parse_args()
    for case in args.case or list(CASES):
        steps = args.steps or CASES[case][0]
        seconds: dict[str, list[float]] = {}
        scores: dict[str, list[float]] = {"rlexp": [], "rlexp sbx": []}
        with tempfile.TemporaryDirectory() as tmp:
            for i in range(args.repeats):
                out = Path(tmp) / str(i)
                out.mkdir()
                for name, command in commands(case, steps, out, args.zoo_python).items():
                    seconds.setdefault(name, []).append(_timed(command, Path(tmp)))
                scores["rlexp"].append(final_eval(out / "rlexp"))
                if (out / "sbx").is_dir():
                    scores["rlexp sbx"].append(final_eval(out / "sbx"))
        median = {name: statistics.median(times) for name, times in seconds.items()}
        print(f"{case}, {steps:,} steps, median of {args.repeats} whole processes (seconds):", flush=True)
        for name, value in median.items():
            print(f"  {name:<10} {value:7.1f}   min {min(seconds[name]):6.1f}  max {max(seconds[name]):6.1f}")
        print(f"  rlexp / zoo       {median['rlexp'] / median['zoo']:.2f}")
        print(f"  rlexp / plain SB3 {median['rlexp'] / median['plain']:.2f}")
        if "rlexp sbx" in median:
            print(f"  (rlexp sbx's first run, compiling into an empty cache: {seconds['rlexp sbx'][0]:.1f})")
            print(f"  rlexp sbx / zoo   {median['rlexp sbx'] / median['zoo']:.2f}")
            print(f"  rlexp sbx / rlexp {median['rlexp sbx'] / median['rlexp']:.2f}")
            print(f"  final eval: sb3 {scores['rlexp']}, sbx {scores['rlexp sbx']}")
        print(flush=True)


if __name__ == "__main__":
    main()
