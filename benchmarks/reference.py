"""Reference results: what each tuned pair reaches over seeds at its tuned budget, from real rlexp runs.

For every seed of a pair it trains ``rlexp algo=<algo> env=<env> seed=<seed>`` with the tuned file's
values and budget and rlexp's default evaluation schedule (one torch thread), and records in
``src/rlexp/data/reference/<algo>_<env>.json`` the final evaluation (10 episodes), the learning curve (the periodic
evaluations' means at their steps), the wall time and the run's provenance (rlexp commit, library
versions, host, the command). The files ship with rlexp (package data of ``rlexp.data``).

It resumes: seeds already recorded are kept, so that a reference can be built over several sittings;
``--jobs 2`` trains two seeds at a time (each on one torch thread: this machine has 2 cores). ``--check``
re-runs the given seeds and fails unless each reproduces its recorded final evaluation and curve exactly
(rlexp's seeding is deterministic on one machine and library set).

    python benchmarks/reference.py --pair ppo_cartpole --seeds 0-9 [--jobs 2]
    python benchmarks/reference.py --pair ppo_cartpole --seeds 0-2 --check
    python benchmarks/reference.py --pair ppo_cartpole --seeds 100-102 --regress [--set algo.learning_rate=1e-7]
    nox -s reference -- --pair dqn_cartpole --seeds 0-9
    nox -s regress                                   # what CI runs: 3 new seeds of PPO CartPole

``--regress`` trains seeds the reference does not hold and fails when they score below it: a one-sided
Mann-Whitney U test (the report's test) of their final evaluations against the reference seeds' at
p < 0.01, so that a change to rlexp that breaks learning is caught and seed luck is not (3 seeds at
least against 10: with 2 the test can never reach 0.01). ``--set`` adds
overrides to those runs (a sabotage shows the check fails).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
REFERENCE_DIR = ROOT / "src" / "rlexp" / "data" / "reference"
FORMAT = 1
# the pairs to cover, cheapest first (their tuned budgets: conf/tuned/<pair>.yaml)
PAIRS = (
    "ppo_cartpole",
    "dqn_cartpole",
    "a2c_cartpole",
    "dqn_acrobot",
    "sac_pendulum",
    "td3_pendulum",
    "ppo_pendulum",
    "dqn_lunarlander",
    "ppo_lunarlander",
)


def seed_list(text: str) -> list[int]:
    """``0-9`` or ``0,3,5`` (or both: ``0-2,7``)."""
    seeds: list[int] = []
    for part in text.split(","):
        low, _, high = part.partition("-")
        seeds += list(range(int(low), int(high or low) + 1))
    return seeds


def command(pair: str, seed: int, run_dir: Path, extra: list[str] | None = None) -> list[str]:
    algo, env = pair.split("_", 1)
    return [sys.executable, "-m", "rlexp", f"algo={algo}", f"env={env}", f"seed={seed}", "torch_threads=1",
            "curves=false", *(extra or []), f"hydra.run.dir={run_dir}"]  # fmt: skip


def train_seed(pair: str, seed: int, scratch: Path, extra: list[str] | None = None) -> dict[str, Any]:
    """One seed's record: its final evaluation, curve, wall time and provenance."""
    run_dir = scratch / f"{pair}_seed{seed}"
    started = time.perf_counter()
    result = subprocess.run(command(pair, seed, run_dir, extra), capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"{pair} seed {seed} failed: {result.stderr.strip().splitlines()[-1:]}")
    summary = json.loads((run_dir / "summary.json").read_text())
    evaluations = np.load(run_dir / "evaluations.npz")
    return {
        "final": summary["final_eval"]["mean"],
        "final_std": summary["final_eval"]["std"],
        "steps_done": summary["steps_done"],
        "curve": {
            "steps": [int(s) for s in evaluations["timesteps"]],
            "mean": [float(m) for m in evaluations["results"].mean(axis=1)],
        },
        "wall_s": round(time.perf_counter() - started, 1),
        "verdict": (summary.get("reference") or {}).get("line"),
        "rlexp_commit": summary["git"]["rlexp"]["commit"],
        "versions": summary["versions"],
        "host": summary["host"],
    }


def _header(pair: str) -> dict[str, Any]:
    import yaml
    from omegaconf import OmegaConf

    import rlexp

    algo, env = pair.split("_", 1)
    cfg = rlexp.compose([f"algo={algo}", f"env={env}"])
    return {
        "format": FORMAT,
        "algo": algo,
        "env": env,
        "env_id": cfg.env.id,
        "tuned_file": cfg.tuned_file,
        "tuned_source": cfg.tuned_source,
        "n_timesteps": int(cfg.n_timesteps),
        "evaluation": {
            "freq": int(cfg.callbacks.eval.freq),
            "episodes": int(cfg.callbacks.eval.n_episodes),
            "final_episodes": int(cfg.callbacks.eval.final_episodes),
            "deterministic": bool(cfg.callbacks.eval.deterministic),
        },
        "command": " ".join(command(pair, 0, Path("RUN"))[2:]).replace("seed=0", "seed=<seed>"),
        "produced_by": f"python benchmarks/reference.py --pair {pair} --seeds <seeds>",
        # the experiment config of the seeds (seed 0's): a run is compared with it key by key
        "config": yaml.safe_load(OmegaConf.to_yaml(cfg, resolve=True)),
        "seeds": {},
    }


def load(pair: str) -> dict[str, Any]:
    path = REFERENCE_DIR / f"{pair}.json"
    header = _header(pair)
    if not path.is_file():
        return header
    found = json.loads(path.read_text())
    changed = [k for k in ("format", "env_id", "n_timesteps", "evaluation") if found.get(k) != header[k]]
    if changed:
        raise SystemExit(f"{path}: recorded with another {', '.join(changed)} than the tuned file now gives")
    return found


def save(pair: str, reference: dict[str, Any]) -> None:
    REFERENCE_DIR.mkdir(parents=True, exist_ok=True)
    reference["seeds"] = dict(sorted(reference["seeds"].items(), key=lambda item: int(item[0])))
    path = REFERENCE_DIR / f"{pair}.json"
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text(json.dumps(reference, indent=1) + "\n")
    partial.replace(path)


def check(pair: str, reference: dict[str, Any], seeds: list[int], jobs: int) -> bool:
    """Re-runs recorded seeds; True when each reproduces its final evaluation and curve exactly."""
    missing = [s for s in seeds if str(s) not in reference["seeds"]]
    if missing:
        raise SystemExit(f"{pair}: seeds {missing} are not recorded: nothing to check them against")
    ok = True
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(jobs) as pool:
        for seed, got in zip(seeds, pool.map(lambda s: train_seed(pair, s, Path(tmp)), seeds), strict=True):
            want = reference["seeds"][str(seed)]
            same = got["final"] == want["final"] and got["curve"] == want["curve"]
            print(
                f"{pair} seed {seed}: final {got['final']} (recorded {want['final']}) {'same' if same else 'DIFFERS'}"
            )
            ok &= same
    return ok


def regress(pair: str, reference: dict[str, Any], seeds: list[int], jobs: int, extra: list[str]) -> bool:
    """Trains seeds the reference does not hold; True unless they score below it (one-sided Mann-Whitney U
    test of their finals against the reference's, p < 0.01)."""
    from scipy.stats import mannwhitneyu

    recorded = [s for s in seeds if str(s) in reference["seeds"]]
    if recorded or len(reference["seeds"]) < 5 or len(seeds) < 3:
        raise SystemExit(f"{pair}: regress takes 3 seeds or more that the reference does not hold (it holds "
                         f"{sorted(map(int, reference['seeds']))}) and a reference of 5 seeds or more")  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(jobs) as pool:
        runs = list(pool.map(lambda s: train_seed(pair, s, Path(tmp), extra), seeds))
    finals = [run["final"] for run in runs]
    for seed, run in zip(seeds, runs, strict=True):
        print(f"{pair} seed {seed}: {run['verdict']}")
    ref = [s["final"] for s in reference["seeds"].values()]
    p = float(mannwhitneyu(finals, ref, alternative="less").pvalue)
    below = p < 0.01
    print(f"{pair}: {len(finals)} new seeds {finals} against {len(ref)} reference seeds: one-sided Mann-Whitney "
          f"p = {p:.4f}: {'BELOW the reference' if below else 'not below the reference'}")  # fmt: skip
    return not below


def build(pair: str, reference: dict[str, Any], seeds: list[int], jobs: int) -> None:
    todo = [s for s in seeds if str(s) not in reference["seeds"]]
    print(f"{pair}: {len(seeds) - len(todo)} of {len(seeds)} seeds recorded; training {todo}", flush=True)
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(jobs) as pool:
        futures = {seed: pool.submit(train_seed, pair, seed, Path(tmp)) for seed in todo}
        for seed, future in futures.items():
            reference["seeds"][str(seed)] = future.result()
            save(pair, reference)  # each seed as it ends: a stopped sitting keeps what it finished
            print(f"{pair} seed {seed}: final {reference['seeds'][str(seed)]['final']}", flush=True)
    finals = [s["final"] for s in reference["seeds"].values()]
    print(f"{pair}: {len(finals)} seeds, finals {sorted(finals)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pair", choices=PAIRS, action="append", help="default: every pair")
    parser.add_argument("--seeds", type=seed_list, default=seed_list("0-9"))
    parser.add_argument("--jobs", type=int, default=1, help="seeds trained at a time (one torch thread each)")
    parser.add_argument("--check", action="store_true", help="re-run recorded seeds; fail unless they reproduce")
    parser.add_argument("--regress", action="store_true", help="train new seeds; fail if they score below it")
    parser.add_argument("--set", action="append", default=[], help="an override for --regress runs")
    args = parser.parse_args()
    failed = []
    for pair in args.pair or PAIRS:
        reference = load(pair)
        if args.check:
            if not check(pair, reference, args.seeds, args.jobs):
                failed.append(pair)
        elif args.regress:
            if not regress(pair, reference, args.seeds, args.jobs, args.set):
                failed.append(pair)
        else:
            build(pair, reference, args.seeds, args.jobs)
    if failed:
        raise SystemExit(f"not reproduced: {', '.join(failed)}")


if __name__ == "__main__":
    main()
