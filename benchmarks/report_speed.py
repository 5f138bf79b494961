"""How long `rlexp report` takes over 200 synthetic run dirs (4 groups x 5 envs x 10 seeds, 50 periodic
evaluations each) at the default 50,000 bootstrap repetitions (target: under 20 s here), and rlexp's
vectorised bootstrap against rliable's on the same scores, side by side at equal repetitions.

    python benchmarks/report_speed.py [--reps 50000]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

GROUPS, ENVS, SEEDS, EVALUATIONS = 4, 5, 10, 50
SIDE_BY_SIDE_REPS = 1_000  # rliable draws its repetitions one by one: ~0.4 ms each here


def write_runs(root: Path) -> None:
    """Run dirs as training writes them (summary.json, config.yaml, evaluations.npz), with made-up
    learning curves: group g learns faster and higher on every env."""
    rng = np.random.default_rng(0)
    steps = np.linspace(2_000, 100_000, EVALUATIONS).astype(np.int64)
    for g in range(GROUPS):
        for e in range(ENVS):
            for seed in range(SEEDS):
                run = root / f"g{g}_e{e}_s{seed}"
                run.mkdir(parents=True)
                curve = (100 + 50 * g) / (1 + np.exp(-(steps - 50_000 / (1 + g)) / 10_000))
                results = curve[:, None] + rng.normal(0, 20, size=(EVALUATIONS, 5))
                np.savez(run / "evaluations.npz", timesteps=steps, results=results, ep_lengths=np.ones_like(results))
                final = float(results[-1].mean() + rng.normal(0, 5))
                summary = {
                    "status": "completed",
                    "algo": f"algo{g}",
                    "env_id": f"Env{e}-v0",
                    "seed": seed,
                    "steps_done": int(steps[-1]),
                    "final_eval": {"mean": final, "std": 10.0, "episodes": 10},
                    "best_eval": {"mean": float(results.mean(axis=1).max()), "episodes": 5},
                    "random_baseline": {"mean": 0.0},
                }
                (run / "summary.json").write_text(json.dumps(summary))
                config = {
                    "algo": {"_target_": f"algo{g}", "learning_rate": 10.0 ** -(g + 2)},
                    "env": {"id": f"Env{e}-v0"},
                    "seed": seed,
                }
                (run / "config.yaml").write_text(yaml.safe_dump(config))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=50_000)
    args = parser.parse_args()
    from rlexp.reporting.compute import Settings
    from rlexp.reporting.make_report import collect, write_report
    from rlexp.reporting.metrics import parse_metric
    from rlexp.stats import bootstrap
    from rlexp.stats.aggregates import IQM, MEAN

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "runs"
        write_runs(root)
        settings = Settings(metric=parse_metric("final"), reps=args.reps, targets={"*": 300.0})
        start = time.perf_counter()
        runs, grids = collect([root], settings.metric)
        report = write_report(runs, grids, Path(tmp) / "report", settings, [root])
        seconds = time.perf_counter() - start
        print(
            f"rlexp report: {len(runs)} runs, {len(report.groups)} group x env cells, {len(report.comparisons)} comparisons, "
            f"{args.reps:,} reps: {seconds:.1f} s (target < 20 s)"
        )
        scores = np.array(
            [
                [[r.score for r in runs if r.group == f"algo=algo{g}" and r.env == f"Env{e}-v0"] for e in range(ENVS)]
                for g in range(GROUPS)
            ]
        )
    try:
        from rliable import library, metrics
    except Exception as err:  # (rliable needs pandas < 3 for arch 7: the test extra pins it)
        print(f"rliable side by side skipped: {type(err).__name__}: {err}")
        return
    matrix = scores[0].T  # runs x tasks of one group
    start = time.perf_counter()
    bootstrap.interval_estimates(list(matrix.T), {"iqm": IQM, "mean": MEAN}, SIDE_BY_SIDE_REPS)
    ours = time.perf_counter() - start
    start = time.perf_counter()
    library.get_interval_estimates(
        {"g": matrix}, lambda s: np.array([metrics.aggregate_iqm(s), metrics.aggregate_mean(s)]), reps=SIDE_BY_SIDE_REPS
    )
    theirs = time.perf_counter() - start
    print(
        f"stratified bootstrap of IQM and mean, {SEEDS} runs x {ENVS} envs, {SIDE_BY_SIDE_REPS:,} reps: "
        f"rlexp {ours * 1000:.1f} ms, rliable {theirs * 1000:.0f} ms: rliable / rlexp = {theirs / ours:.0f}x"
    )


if __name__ == "__main__":
    main()
