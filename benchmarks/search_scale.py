"""Trials per minute of one shared study at 1, 2, 4 and 8 workers on tiny trials: rlexp's sweepers (the
pattern that scales: one `rlexp -m hparams=search` per worker, one storage) against Optuna's own
`optimize` running the same objective in as many processes (SB3 PPO on CartPole for 512 steps, then 5
evaluation episodes), side by side, so that the ratio is rlexp's cost per trial: Hydra's job, the run
dir and its files, the evaluation schedule and the checks.

The storage is a throw-away PostgreSQL server (Debian's postgresql package, started as the tests start
it: run as root), as a lab's would be. Every worker runs one torch thread; on this 2-core machine more
than 2 workers share the cores, so trials per minute stop growing there: the figures show the overhead of
coordination (asks, tells, the reclaim check) as workers are added, not the speed of a cluster.

    python benchmarks/search_scale.py [--workers 1,2,4,8] [--trials 24]
    nox -s benchmark-search-scale
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STEPS, EPISODES = 512, 5
RLEXP_TRIAL = [
    "hparams=search",
    "algo=ppo",
    "env=cartpole",
    "env.n_envs=1",
    f"n_timesteps={STEPS}",
    "algo.n_steps=128",
    "algo.batch_size=64",
    "algo.n_epochs=1",
    "callbacks.eval.freq=0",
    f"callbacks.eval.final_episodes={EPISODES}",
    "algo.learning_rate=tag(log, interval(1e-5, 1e-2))",
    "hydra/sweeper/pruner=none",
]
OPTUNA_WORKER = f"""
import sys, optuna, torch, gymnasium as gym
from stable_baselines3 import PPO
from stable_baselines3.common.evaluation import evaluate_policy
torch.set_num_threads(1)
optuna.logging.set_verbosity(optuna.logging.WARNING)
url, name, cap = sys.argv[1], sys.argv[2], int(sys.argv[3])
study = optuna.load_study(study_name=name, storage=url)

def objective(trial):
    lr = trial.suggest_float("learning_rate", 1e-5, 1e-2, log=True)
    env = gym.make("CartPole-v1")
    model = PPO("MlpPolicy", env, n_steps=128, batch_size=64, n_epochs=1, learning_rate=lr, seed=trial.number, device="cpu")
    model.learn({STEPS})
    return evaluate_policy(model, gym.make("CartPole-v1"), n_eval_episodes={EPISODES})[0]

study.optimize(objective, callbacks=[optuna.study.MaxTrialsCallback(cap)])
"""


def _postgres() -> object:
    sys.path.insert(0, str(ROOT / "tests"))
    from infra.postgres import Postgres, postgres_bin

    pg_bin = postgres_bin()
    if pg_bin is None:
        raise SystemExit("benchmarks/search_scale.py: no PostgreSQL here (apt-get install postgresql)")
    return Postgres(pg_bin)


def _timed(commands: list[list[str]], cwd: Path) -> float:
    """Seconds until all the worker processes, started at once, have ended (each must succeed)."""
    start = time.perf_counter()
    procs = [
        subprocess.Popen(c, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) for c in commands
    ]
    for proc in procs:
        _, err = proc.communicate()
        if proc.returncode:
            raise SystemExit(f"a worker failed: {err[-2000:]}")
    return time.perf_counter() - start


def run_rlexp(url: str, workers: int, trials: int, work: Path, name: str) -> float:
    common = [
        *RLEXP_TRIAL,
        f"hydra.sweeper.storage={url}",
        f"hydra.sweeper.study_name={name}",
        f"hydra.sweeper.n_trials={trials}",
        f"hydra.sweeper.max_total_trials={trials}",
        "torch_threads=1",
    ]
    worker = [sys.executable, "-m", "rlexp", "-m", *common]
    return _timed([[*worker, f"hydra.sweep.dir={work / name / str(i)}"] for i in range(workers)], work)


def run_optuna(url: str, workers: int, trials: int, work: Path, name: str) -> float:
    import optuna

    optuna.create_study(study_name=name, storage=url, direction="maximize")
    return _timed([[sys.executable, "-c", OPTUNA_WORKER, url, name, str(trials)]] * workers, work)


def finished(url: str, name: str) -> int:
    import optuna
    from optuna.trial import TrialState

    study = optuna.load_study(study_name=name, storage=url)
    return sum(t.state in (TrialState.COMPLETE, TrialState.PRUNED) for t in study.trials)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", default="1,2,4,8", help="numbers of workers, comma-separated")
    parser.add_argument("--trials", type=int, default=24, help="trials of each study")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="rlexp-search-scale-"))
    server = _postgres()
    url = server.url
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    rows = []
    try:
        for workers in [int(w) for w in args.workers.split(",")]:
            optuna_s = run_optuna(url, workers, args.trials, work, f"optuna-{workers}")
            rlexp_s = run_rlexp(url, workers, args.trials, work, f"rlexp-{workers}")
            done = (finished(url, f"optuna-{workers}"), finished(url, f"rlexp-{workers}"))
            rows.append((workers, done, args.trials / optuna_s * 60, args.trials / rlexp_s * 60, rlexp_s / optuna_s))
            print(
                f"{workers} workers: optuna {optuna_s:.1f} s, rlexp {rlexp_s:.1f} s for {args.trials} trials "
                f"(finished: {done[0]}, {done[1]})",
                flush=True,
            )
    finally:
        server.remove()
    print(
        f"\nworkers  optuna trials/min  rlexp trials/min  rlexp time / optuna time   (PostgreSQL, {STEPS}-step trials)"
    )
    for workers, _, optuna_rate, rlexp_rate, ratio in rows:
        print(f"{workers:>7}  {optuna_rate:>17.1f}  {rlexp_rate:>16.1f}  {ratio:>24.2f}")


if __name__ == "__main__":
    main()
