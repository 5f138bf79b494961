"""A search that never idles: rlexp's sweeper in batches (hydra.sweeper.mode=batch) and steady (the default),
and Optuna's own `optimize` on the same objective (RL Zoo's search: its n_jobs threads), at 1, 2 and 4
workers, with the median pruner, side by side in one run.

The objective: SB3 PPO on CartPole for 4,096 steps with SB3's defaults (no tuned file), evaluated every 512 (3
episodes, seeded; reported to the pruner as evaluation 1, 2, ...), then 5 final episodes; the learning rate alone
searched (TPE, seeded). Pruned trials end early,
so trials differ in length, as in a real search. Per method and worker count it prints the wall time for the
trials, trials per minute, the idle share of the workers (1 - sum of trial times / (workers x wall)), and the
time until the best value reached the value every method reached. rlexp's 2- and 4-worker searches run their
trials as processes: hydra/launcher=local_parallel (each forked from a server that imported rlexp once), and,
as the searches ran before it, hydra/launcher=submitit_local in batches (a new Python process per trial); at
1 worker in the sweeper's process (the default). This machine has 2 cores: 4 workers share them.

    python benchmarks/search_steady.py [--workers 1,2,4] [--trials 16]
    nox -s benchmark-search-steady
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import optuna

STEPS, EVAL_EVERY, EVAL_EPISODES, FINAL_EPISODES = 4096, 512, 3, 5
RLEXP_TRIAL = [
    "hparams=search",
    "algo=ppo",
    "env=cartpole",
    "~tuned",  # (SB3's defaults, as the Optuna side's PPO: the same objective)
    "hydra.sweeper.params={}",  # (the learning rate alone searched, as on the Optuna side)
    "env.n_envs=1",
    f"n_timesteps={STEPS}",
    "algo.n_steps=256",
    "algo.batch_size=64",
    "algo.n_epochs=2",
    f"callbacks.eval.freq={EVAL_EVERY}",
    f"callbacks.eval.n_episodes={EVAL_EPISODES}",
    f"callbacks.eval.final_episodes={FINAL_EPISODES}",
    "algo.learning_rate=tag(log, interval(1e-5, 1e-2))",
    "hydra/sweeper/pruner=median",
    "hydra.sweeper.plots=false",
    "torch_threads=1",
]
# the same objective, sampler and pruner in Optuna's optimize (RL Zoo's way: n_jobs threads in one process)
OPTUNA_SEARCH = f"""
import sys, optuna, torch, gymnasium as gym
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.monitor import Monitor
torch.set_num_threads(1)
optuna.logging.set_verbosity(optuna.logging.WARNING)
url, trials, workers = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
study = optuna.create_study(
    study_name="steady", storage=url, direction="maximize",
    sampler=optuna.samplers.TPESampler(n_startup_trials=4, multivariate=True, seed=0),
    pruner=optuna.pruners.MedianPruner(n_startup_trials=2, n_warmup_steps=2, n_min_trials=1),
)

class Report(BaseCallback):
    def __init__(self, trial, env):
        super().__init__()
        self.trial, self.env, self.done = trial, env, 0
    def _on_step(self):
        if self.num_timesteps // {EVAL_EVERY} > self.done:
            self.done += 1
            mean = evaluate_policy(self.model, self.env, n_eval_episodes={EVAL_EPISODES})[0]
            self.trial.report(mean, self.done)
            if self.trial.should_prune():
                raise optuna.TrialPruned()
        return True

def objective(trial):
    lr = trial.suggest_float("algo.learning_rate", 1e-5, 1e-2, log=True)
    env, eval_env = gym.make("CartPole-v1"), Monitor(gym.make("CartPole-v1"))
    eval_env.reset(seed=trial.number)  # (its episodes the same from run to run, as rlexp's seeded ones)
    model = PPO("MlpPolicy", env, n_steps=256, batch_size=64, n_epochs=2, learning_rate=lr, seed=trial.number,
                device="cpu")
    model.learn({STEPS}, callback=Report(trial, eval_env))
    return evaluate_policy(model, eval_env, n_eval_episodes={FINAL_EPISODES})[0]

study.optimize(objective, n_trials=trials, n_jobs=workers)
"""


@dataclass
class Result:
    wall: float
    trials: list[optuna.trial.FrozenTrial]
    job_seconds: float | None = None  # rlexp: its jobs' own times (a trial asked with its batch waits in it)

    def busy(self) -> float:
        if self.job_seconds is not None:
            return self.job_seconds
        return sum(
            (t.datetime_complete - t.datetime_start).total_seconds()
            for t in self.trials
            if t.datetime_start and t.datetime_complete
        )

    def first_reaching(self, value: float) -> float | None:
        """Seconds from the first trial's start until a finished trial's value reached ``value``."""
        start = min(t.datetime_start for t in self.trials if t.datetime_start)
        done = [t for t in self.trials if t.value is not None and t.value >= value and t.datetime_complete]
        return min((t.datetime_complete - start).total_seconds() for t in done) if done else None

    def best(self) -> float:
        return max((t.value for t in self.trials if t.value is not None and t.state.name == "COMPLETE"), default=-1.0)


def _study(url: str, name: str) -> list[optuna.trial.FrozenTrial]:
    return optuna.load_study(study_name=name, storage=url).get_trials(deepcopy=False)


def run_rlexp(work: Path, workers: int, trials: int, mode: str, launcher_name: str = "local_parallel") -> Result:
    sweep = work / f"rlexp-{mode}-{launcher_name}-{workers}"
    launcher = [f"hydra/launcher={launcher_name}"] if workers > 1 else []
    args = [*RLEXP_TRIAL, *launcher, f"hydra.sweeper.n_jobs={workers}", f"hydra.sweeper.mode={mode}"]
    args += [f"hydra.sweeper.n_trials={trials}", "hydra.sweeper.study_name=steady", f"hydra.sweep.dir={sweep}"]
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "rlexp", "-m", *args], cwd=work, check=True, capture_output=True)
    wall = time.perf_counter() - start
    return Result(wall, _study(f"sqlite:///{sweep / 'study.db'}", "steady"), _job_seconds(sweep))


def _job_seconds(sweep: Path) -> float:
    """The trials' runs from their start to their end (summary.json's times), summed."""
    from datetime import datetime

    total = 0.0
    for summary in sweep.glob("trial_*/summary.json"):
        record = json.loads(summary.read_text())
        if record.get("start_time") and record.get("end_time"):
            ended, began = (datetime.fromisoformat(record[k]) for k in ("end_time", "start_time"))
            total += (ended - began).total_seconds()
    return total


def run_optuna(work: Path, workers: int, trials: int) -> Result:
    url = f"sqlite:///{work / f'optuna-{workers}.db'}"
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", OPTUNA_SEARCH, url, str(trials), str(workers)], check=True)
    return Result(time.perf_counter() - start, _study(url, "steady"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--trials", type=int, default=16)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        rows: list[tuple[str, int, Result]] = []
        for workers in (int(w) for w in args.workers.split(",")):
            modes = ["batch", "steady"] if workers > 1 else ["steady"]  # (one worker: the same search)
            if workers > 1:  # (a new process per trial, in batches: the searches before local_parallel forked)
                result = run_rlexp(work, workers, args.trials, "batch", "submitit_local")
                rows.append(("rlexp submitit", workers, result))
            for mode in modes:
                rows.append((f"rlexp {mode}", workers, run_rlexp(work, workers, args.trials, mode)))
            rows.append(("optuna optimize", workers, run_optuna(work, workers, args.trials)))
        target = min(result.best() for _, _, result in rows)  # (a value every method reached)
        print(
            f"{args.trials} trials each; time to best = until a trial reached {target:.1f}, every method's best or less"
        )
        print(
            f"{'method':<16} {'workers':>7} {'wall s':>8} {'trials/min':>10} {'idle':>6} {'to best s':>9} {'pruned':>6}"
        )
        for name, workers, result in rows:
            reached = result.first_reaching(target)
            idle = 1 - result.busy() / (workers * result.wall)
            pruned = sum(t.state.name == "PRUNED" for t in result.trials)
            print(
                f"{name:<16} {workers:>7} {result.wall:>8.1f} {60 * len(result.trials) / result.wall:>10.1f} "
                f"{idle:>6.0%} {reached if reached is not None else float('nan'):>9.1f} {pruned:>6}"
            )
        by = {(name, workers): result.wall for name, workers, result in rows}
        for workers in sorted({w for _, w, _ in rows if w > 1}):
            ratio = by[("rlexp steady", workers)] / by[("rlexp batch", workers)]
            before = by[("rlexp steady", workers)] / by[("rlexp submitit", workers)]
            print(
                f"{workers} workers: steady takes {ratio:.2f}x the wall time of batches for the same trials, "
                f"{before:.2f}x that of batches of submitit_local processes"
            )
        if ("rlexp steady", 1) in by:
            print(
                f"1 worker: rlexp takes {by[('rlexp steady', 1)] / by[('optuna optimize', 1)]:.2f}x Optuna's optimize"
            )


if __name__ == "__main__":
    main()
