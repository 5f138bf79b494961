"""Learning evidence per env family on this machine: one short run per family with the zoo's tuned values
(picked by the zoo's env id), at a budget this machine affords, its final evaluation against the random
policy measured in the same run (summary.json's random_baseline). The zoo's own budgets (1-10 M steps)
are beyond a 2-core machine; the table says which budget each case ran.

    python benchmarks/env_families.py [--case mujoco] [--seed 0]     (nox -s benchmark-families)

Prints one row per case: env id, algorithm, steps, wall seconds, final eval (mean +/- std over 10
episodes), random policy's mean, and the gain over random in the random policy's std units.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# case -> (overrides, the zoo's own budget for the pair)
CASES: dict[str, tuple[list[str], int]] = {
    "classic": (["algo=ppo", "env.id=CartPole-v1", "n_timesteps=50000"], 100_000),
    "box2d": (["algo=ppo", "env.id=LunarLander-v3", "n_timesteps=200000"], 1_000_000),
    "mujoco": (["algo=ppo", "env.id=Hopper-v4", "n_timesteps=100000"], 1_000_000),
    "minigrid": (["algo=ppo", "env.id=MiniGrid-Empty-Random-5x5-v0", "n_timesteps=100000"], 100_000),
    "atari": (["algo=ppo", "env.id=BreakoutNoFrameskip-v4", "n_timesteps=100000"], 10_000_000),
    "panda": (["algo=tqc", "env.id=PandaReach-v1", "n_timesteps=5000"], 20_000),
}


def run(case: str, seed: int, out: Path) -> dict:
    overrides, zoo_budget = CASES[case]
    run_dir = out / case
    exe = shutil.which("rlexp") or str(Path(sys.executable).parent / "rlexp")
    args = [exe, *overrides, f"seed={seed}", "torch_threads=1", "curves=false", "logger.verbose=0"]
    args += ["callbacks.eval.freq=0", f"hydra.run.dir={run_dir}"]
    start = time.perf_counter()
    result = subprocess.run(args, capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    seconds = time.perf_counter() - start
    if result.returncode != 0:
        return {"case": case, "error": result.stderr.strip().splitlines()[-1:]}
    summary = json.loads((run_dir / "summary.json").read_text())
    final, random = summary["final_eval"], summary.get("random_baseline") or {}
    gain = (final["mean"] - random.get("mean", 0.0)) / max(random.get("std", 0.0), 1e-8) if random else None
    return {
        "case": case,
        "env_id": summary["env_id"],
        "algo": summary["algo"],
        "steps": summary["steps_done"],
        "zoo_budget": zoo_budget,
        "seconds": round(seconds, 1),
        "final": f"{final['mean']:.2f} +/- {final['std']:.2f}",
        "random": None if not random else round(random["mean"], 2),
        "gain_in_random_std": None if gain is None else round(gain, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--case", action="append", choices=list(CASES), help="a case (default: all)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rlexp-families-") as tmp:
        rows = [run(case, args.seed, Path(tmp)) for case in args.case or CASES]
    print("| case | env id | algo | steps (zoo's budget) | wall s | final eval | random policy | gain (random std) |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        if "error" in r:
            print(f"| {r['case']} | error: {' '.join(r['error'])} |")
            continue
        print(
            f"| {r['case']} | {r['env_id']} | {r['algo']} | {r['steps']:,} ({r['zoo_budget']:,}) | {r['seconds']} "
            f"| {r['final']} | {r['random']} | {r['gain_in_random_std']} |"
        )


if __name__ == "__main__":
    main()
