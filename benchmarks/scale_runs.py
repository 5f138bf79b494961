"""`rlexp report` and `rlexp plot` at the scale of a lab: time and peak memory over 1,000, 3,000 and
10,000 run dirs in the real format, to see that both grow linearly and fit in a minute and 1 GiB here.

The runs are clones of one real PPO CartPole run (trained first, 20,000 steps, or given with
--template), each with its own seed, learning rate (10 groups), final and periodic evaluations, in
the real run-dir format: config.yaml, summary.json and evaluations.npz written per run, the other
files (model.zip, best/, monitor/, logs/, .hydra/) hard-linked from the template, so that the disk
holds them once but every command walks and reads them as it would real ones. Among them, 3 broken
dirs: a half-written summary.json, a truncated evaluations.npz and a config.yaml that is not YAML;
each must be one line and a count, never a traceback.

    python benchmarks/scale_runs.py [--sizes 1000,3000,10000] [--template RUN] [--keep DIR]
    nox -s benchmark-scale
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

GROUPS = 10
PER_RUN = {"config.yaml", "summary.json", "evaluations.npz", "rlexp.log", "curves.png", ".rlexp.lock"}
MEASURE = """import resource, subprocess, sys, time
t = time.perf_counter()
done = subprocess.run(sys.argv[1:], capture_output=True, text=True)
print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, done.returncode)
sys.stderr.write(done.stdout + done.stderr)
"""


def train_template(where: Path) -> Path:
    """One real PPO CartPole run of 20,000 steps, evaluated every 1,000 (20 points on its curve)."""
    run = where / "template"
    subprocess.run(
        ["rlexp", "n_timesteps=20000", "callbacks.eval.freq=1000", f"hydra.run.dir={run}"],
        check=True,
        stdout=subprocess.DEVNULL,
        cwd=where,
    )
    return run


def clone_runs(template: Path, root: Path, runs: int, seed: int = 0) -> None:
    """``runs`` clones of ``template`` in GROUPS learning-rate groups (root/lr_<g>/<i>, as a multirun's
    numbered jobs), then 3 broken dirs."""
    rng = np.random.default_rng(seed)
    config_text = (template / "config.yaml").read_text()
    summary = json.loads((template / "summary.json").read_text())
    evaluations = dict(np.load(template / "evaluations.npz"))
    shared = [p for p in template.rglob("*") if p.is_file() and p.relative_to(template).as_posix() not in PER_RUN]
    for i in range(runs):
        group, job = i % GROUPS, i // GROUPS
        lr = round(10 ** (-4.0 + 0.15 * group), 8)
        run = root / f"lr_{group}" / str(job)
        run.mkdir(parents=True)
        for path in shared:
            target = run / path.relative_to(template)
            target.parent.mkdir(parents=True, exist_ok=True)
            os.link(path, target)
        config = re.sub(r"(?m)^seed: \d+$", f"seed: {i}", config_text)
        config = re.sub(r"(?m)^(  learning_rate:) .*$", rf"\1 {lr}", config, count=1)
        (run / "config.yaml").write_text(config)
        level = 150 + 30 * group
        curve = level * np.linspace(0.1, 1.0, evaluations["results"].shape[0])[:, None]
        results = np.clip(curve + rng.normal(0, 40, evaluations["results"].shape), 8, 500)
        np.savez(run / "evaluations.npz", **{**evaluations, "results": results})
        final = float(np.clip(level + rng.normal(0, 60), 8, 500))
        mine = {
            **summary,
            "seed": i,
            "run_dir": str(run),
            "final_eval": {**summary["final_eval"], "mean": final},
            "best_eval": {**summary["best_eval"], "mean": float(results.mean(axis=1).max())},
            "command": ["rlexp", f"algo.learning_rate={lr}", f"seed={i}"],
        }
        if isinstance(mine.get("checksums"), dict):
            mine["checksums"] = {**mine["checksums"], "config.yaml": hashlib.sha256(config.encode()).hexdigest()}
        (run / "summary.json").write_text(json.dumps(mine, indent=2))
    broken = [root / "lr_0" / str(runs // GROUPS + k) for k in range(3)]
    for run in broken:
        shutil.copytree(root / "lr_0" / "0", run)
    text = (broken[0] / "summary.json").read_text()
    (broken[0] / "summary.json").write_text(text[: len(text) // 2])  # killed while writing
    data = (broken[1] / "evaluations.npz").read_bytes()
    (broken[1] / "evaluations.npz").unlink()
    (broken[1] / "evaluations.npz").write_bytes(data[: len(data) // 3])
    (broken[2] / "config.yaml").write_text("seed: [unclosed\n  algo: {\n")


def measure(command: list[str]) -> tuple[float, float, int, str]:
    """Wall seconds, peak resident MiB, exit status and output of one command, run as its own process."""
    done = subprocess.run([sys.executable, "-c", MEASURE, *command], capture_output=True, text=True)
    seconds, kib, code = done.stdout.split()
    return float(seconds), int(kib) / 1024, int(code), done.stderr


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,3000,10000", help="numbers of runs, comma-separated")
    parser.add_argument("--template", type=Path, help="a completed run dir to clone (default: train one)")
    parser.add_argument("--keep", type=Path, help="write the runs here and keep them (default: a temp dir)")
    parser.add_argument("--no-plot", action="store_true", help="time rlexp report only")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    work = args.keep or Path(tempfile.mkdtemp(prefix="rlexp-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    template = args.template or train_template(work)
    rows: list[dict[str, Any]] = []
    try:
        for size in sizes:
            root = work / f"runs_{size}"
            if not root.exists():
                t = time.perf_counter()
                clone_runs(template, root, size)
                print(f"wrote {size:,} runs + 3 broken in {time.perf_counter() - t:.0f} s", flush=True)
            commands = {"report": ["rlexp", "report", str(root), "--out", str(work / f"report_{size}")]}
            if not args.no_plot:
                commands["plot"] = ["rlexp", "plot", str(root), "--output", str(work / f"plot_{size}.png")]
            for name, command in commands.items():
                seconds, mib, code, said = measure(command)
                lines = said.strip().splitlines()
                rows.append({"command": name, "runs": size, "seconds": seconds, "peak_mib": mib, "exit": code})
                print(f"rlexp {name} over {size:,} runs: {seconds:.1f} s, peak {mib:.0f} MiB, exit {code}")
                for line in lines[:6] + (["...", *lines[-4:]] if len(lines) > 10 else lines[6:]):
                    print(f"    {line}")
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    print("\ncommand  runs     seconds  s/1k runs  peak MiB")
    for r in rows:
        per = r["seconds"] / r["runs"] * 1000
        print(f"{r['command']:<8} {r['runs']:>6,} {r['seconds']:>10.1f} {per:>10.2f} {r['peak_mib']:>9.0f}")


if __name__ == "__main__":
    main()
