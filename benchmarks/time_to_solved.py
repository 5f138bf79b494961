"""Time to a solved agent: rlexp with callbacks.stop=solved against RL Zoo's train.py spending the tuned
budget, whole process, side by side. Same algorithm, tuned values (the zoo's own), seed, one torch thread;
both evaluate every EVAL_FREQ steps on 5 episodes (rlexp needs evaluations to notice it solved the task;
the zoo's are its usual periodic ones). rlexp then saves, evaluates 10 final episodes and writes its run
dir as always.

The commands run as fresh processes, in turn (rlexp, zoo, rlexp, ...); per case it prints the median
seconds of each, their ratio, and rlexp's steps at the stop and its final evaluation (seed 0).

    python benchmarks/time_to_solved.py [--repeats 3] [--case ppo-cartpole] [--zoo-python PATH]

Cases: ppo-cartpole (tuned budget 100,000 steps; solved: CartPole-v1's 475), sac-pendulum (20,000 steps;
solved: -200, conf/env/pendulum.yaml's env.reward_threshold). Needs rl_zoo3 (`pip install rl_zoo3`).
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

from speed_vs_zoo import zoo_train  # (benchmarks/ is on the path of a script run from it)

EVAL_FREQ, EVAL_EPISODES = 2_000, 5
# case -> rlexp overrides, zoo arguments
CASES = {
    "ppo-cartpole": (["algo=ppo", "env=cartpole"], ["--algo", "ppo", "--env", "CartPole-v1"]),
    "sac-pendulum": (["algo=sac", "env=pendulum"], ["--algo", "sac", "--env", "Pendulum-v1"]),
}


def _timed(command: list[str], cwd: Path) -> float:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as an install runs: each package's bytecode cached
    start = time.perf_counter()
    subprocess.run(command, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    return time.perf_counter() - start


def commands(case: str, out: Path, zoo_python: str) -> dict[str, list[str]]:
    overrides, zoo = CASES[case]
    common = [
        "torch_threads=1",
        "seed=0",
        f"callbacks.eval.freq={EVAL_FREQ}",
        f"callbacks.eval.n_episodes={EVAL_EPISODES}",
    ]
    return {
        "rlexp": [sys.executable, "-m", "rlexp", *overrides, *common, "callbacks.stop=solved", f"hydra.run.dir={out}"],
        "zoo": zoo_train(zoo_python, zoo, EVAL_FREQ, EVAL_EPISODES, out.with_name(out.name + "_zoo")),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--case", choices=sorted(CASES), action="append")
    parser.add_argument("--zoo-python", default=sys.executable, help="a Python with rl_zoo3 installed")
    args = parser.parse_args()
    for case in args.case or list(CASES):
        seconds: dict[str, list[float]] = {"rlexp": [], "zoo": []}
        stops, finals = [], []
        with tempfile.TemporaryDirectory() as tmp:
            for i in range(args.repeats):
                out = Path(tmp) / f"run{i}"
                for name, command in commands(case, out, args.zoo_python).items():
                    seconds[name].append(_timed(command, Path(tmp)))
                summary = json.loads((out / "summary.json").read_text())
                stops.append(summary["stopped_early_at"])
                finals.append(round(summary["final_eval"]["mean"], 1))
        median = {name: statistics.median(times) for name, times in seconds.items()}
        print(f"{case}, median of {args.repeats} whole processes (seconds):", flush=True)
        for name, value in median.items():
            print(f"  {name:<6} {value:7.1f}   min {min(seconds[name]):6.1f}  max {max(seconds[name]):6.1f}")
        print(f"  rlexp (stop=solved) / zoo (tuned budget) {median['rlexp'] / median['zoo']:.2f}")
        print(f"  rlexp stopped at steps {stops} of {summary['target_steps']:,}; final eval {finals}")
        print(flush=True)


if __name__ == "__main__":
    main()
