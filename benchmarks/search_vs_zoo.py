"""rlexp's search vs RL Zoo's `train.py -optimize`: same algorithm, env, trials, per-trial budget,
sampler (TPE) and pruner (median), one after the other in one run. Prints trials finished per minute
and the best value each reports.

    python benchmarks/search_vs_zoo.py [--trials 8] [--steps 20000] [--startup 4]

Needs rl_zoo3 and pandas (`pip install rl_zoo3 pandas`). Each side keeps its own search space (rlexp:
search_space/ppo.yaml, after the zoo's ranges; the zoo: hyperparams_opt.py) and its own objective
(rlexp: final evaluation of the last agent; the zoo: the last periodic evaluation).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import optuna


def run_rlexp(work: Path, trials: int, steps: int, startup: int) -> tuple[float, optuna.Study]:
    start = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "rlexp",
            "-m",
            "hparams=search",
            "algo=ppo",
            "env=cartpole",
            f"n_timesteps={steps}",
            f"hydra.sweeper.n_trials={trials}",
            f"hydra.sweeper.sampler.n_startup_trials={startup}",
            "hydra.sweeper.pruner.n_startup_trials=2",
            "hydra.sweeper.plots=false",
            "hydra.sweep.dir=rlexp",
        ],
        cwd=work,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    elapsed = time.perf_counter() - start
    return elapsed, optuna.load_study(study_name="ppo-cartpole", storage=f"sqlite:///{work / 'rlexp' / 'study.db'}")


def run_zoo(work: Path, trials: int, steps: int, startup: int) -> tuple[float, optuna.Study]:
    storage = f"sqlite:///{work / 'zoo.db'}"
    start = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "rl_zoo3.train",
            "--algo",
            "ppo",
            "--env",
            "CartPole-v1",
            "-optimize",
            "--n-trials",
            str(trials),
            "-n",
            str(steps),
            "--sampler",
            "tpe",
            "--pruner",
            "median",
            "--n-startup-trials",
            str(startup),
            "--n-evaluations",
            "5",
            "--eval-episodes",
            "5",
            "--no-optim-plots",
            "--storage",
            storage,
            "--study-name",
            "zoo",
            "-f",
            str(work / "zoo_logs"),
            "--seed",
            "0",
        ],
        cwd=work,
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    elapsed = time.perf_counter() - start
    return elapsed, optuna.load_study(study_name="zoo", storage=storage)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=8)
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--startup", type=int, default=4, help="TPE startup trials (both sides)")
    args = parser.parse_args()
    print(f"{'runner':<8} {'trials':>6} {'pruned':>6} {'minutes':>8} {'trials/min':>10} {'best':>8}")
    with tempfile.TemporaryDirectory() as tmp:
        for name, run in (("rlexp", run_rlexp), ("rl-zoo3", run_zoo)):
            elapsed, study = run(Path(tmp), args.trials, args.steps, args.startup)
            done = [t for t in study.trials if t.state.is_finished()]
            pruned = sum(t.state == optuna.trial.TrialState.PRUNED for t in done)
            best = max((t.value for t in done if t.state == optuna.trial.TrialState.COMPLETE), default=float("nan"))
            print(
                f"{name:<8} {len(done):>6} {pruned:>6} {elapsed / 60:>8.2f} {len(done) / (elapsed / 60):>10.2f} "
                f"{best:>8.1f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
