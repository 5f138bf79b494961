"""Whole-process wall time of rlexp against RL Zoo's train.py and a plain Stable-Baselines3 script on equal
work: same algorithm, tuned values, steps, seed and evaluation schedule
(every 10,000 steps, 5 episodes; rlexp and the plain script also end with a final 10-episode evaluation,
which the zoo does not do; the zoo evaluates on one env, rlexp and the plain script on one env per
episode, side by side). The SAC case also runs rlexp with backend=sbx (JAX), with a compilation cache of
its own that the first repeat fills (its time is printed apart: later runs of a user reuse theirs).

Vector envs (env.vec_env): rlexp runs with its default (auto: gymnasium's NumPy CartPole for CartPole,
the lean in-process DummyVecEnv otherwise) and, where a case says, with SB3's DummyVecEnv or EnvPool. The
Atari and MuJoCo cases also print rollout-only steps/s: the train envs alone, stepped with random actions
in this process, built as the zoo builds them and as rlexp does for each backend, in turn.

Torch threads: equal on both sides of each ratio. The zoo, the plain script and rlexp on one (the zoo's
--num-threads 1, rlexp's torch_threads=1); where a case runs on more than one core (Atari), also the zoo on
torch's own default (a thread per core: "zoo default threads") against rlexp on as many ("rlexp 2 threads").

The commands run as fresh processes, in turn (rlexp, zoo, plain, ... then again) so that a noisy shared
machine slows them alike; per case it prints the median seconds of each and their ratios, and the final
evaluations (of the seeds run: seed i in repeat i).

    python benchmarks/speed_vs_zoo.py [--repeats 3] [--case ppo-cartpole] [--zoo-python PATH]

Cases: ppo-cartpole (50,000 steps), ppo-hopper (MuJoCo, 20,000), ppo-atari (Pong, 8 envs, 20,000, without
periodic evaluations: the zoo's would play 5 episodes on one env; rlexp still plays its one final
episode), sac-pendulum (3,000, and backend=sbx), sac-pendulum-sbx (10,000: SB3 against sbx),
ppo-cartpole-one-rollout (256 steps: what a run costs besides learning).

Needs rl_zoo3 (`pip install rl_zoo3`; --zoo-python: a Python that has it), and the sbx, envpool, atari and
mujoco extras.
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
from typing import Any

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
# tuned file, which are the zoo's own; None: no plain script), the other rlexp runs {name: extra overrides},
# and (optional) whether the zoo also runs on torch's default threads
NO_PERIODIC_EVAL = (["callbacks.eval.freq=0", "callbacks.eval.final_episodes=1"], ["--eval-freq", "-1"])
CASES = {
    "ppo-cartpole": (
        50_000,
        ["algo=ppo", "env=cartpole"],
        ["--algo", "ppo", "--env", "CartPole-v1"],
        TUNED["ppo-cartpole"][1],
        {"rlexp dummy": ["env.vec_env=dummy"]},
    ),
    "ppo-hopper": (
        20_000,
        ["algo=ppo", "env=hopper"],
        ["--algo", "ppo", "--env", "Hopper-v5"],
        None,
        {"rlexp envpool": ["env.vec_env=envpool"]},
    ),
    "ppo-atari": (
        20_000,
        ["algo=ppo", "env=atari", "env.vec_env=envpool", "torch_threads=1", *NO_PERIODIC_EVAL[0]],
        ["--algo", "ppo", "--env", "PongNoFrameskip-v4", "--vec-env", "subproc", *NO_PERIODIC_EVAL[1]],
        None,
        {"rlexp 2 threads": [f"torch_threads={os.cpu_count()}"]},
        True,
    ),
    "sac-pendulum": (
        3_000,
        ["algo=sac", "env=pendulum"],
        ["--algo", "sac", "--env", "Pendulum-v1"],
        TUNED["sac-pendulum"][1],
        {"rlexp sbx": ["backend=sbx"]},
    ),
}
CASES["sac-pendulum-sbx"] = (10_000, *CASES["sac-pendulum"][1:])
# start-up and fixed cost: one rollout of the PPO case (8 envs x 32 steps), then evaluation and saving
CASES["ppo-cartpole-one-rollout"] = (256, *CASES["ppo-cartpole"][1:4], {})
# rollout-only steps/s: case -> the zoo's train envs (id, n_envs, wrapper, vec env class, frame stack,
# normalization) and the rlexp backends to build as rlexp does
ROLLOUT = {
    "ppo-atari": (("ale_py:PongNoFrameskip-v4", 8, "atari", "subproc", 4, False), ["lean", "subproc", "envpool"]),
    "ppo-hopper": (("Hopper-v5", 1, None, "dummy", None, True), ["lean", "envpool"]),
    "ppo-cartpole": (("CartPole-v1", 8, None, "dummy", None, False), ["dummy", "lean", "numpy", "envpool"]),
}


def _timed(command: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    env = {**os.environ, "JAX_COMPILATION_CACHE_DIR": str(cwd / "jax_cache")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as an install runs: each package's bytecode cached
    subprocess.run(command, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    return time.perf_counter() - start


def zoo_train(
    python: str, zoo: list[str], eval_freq: int, eval_episodes: int, out: Path, seed: int = 0, threads: bool = True
) -> list[str]:
    """RL Zoo's train.py on one torch thread (``threads=False``: torch's default), with this seed and
    evaluation schedule, writing to ``out``."""
    evaluation = [] if "--eval-freq" in zoo else ["--eval-freq", str(eval_freq), "--eval-episodes", str(eval_episodes)]
    one_thread = ["--num-threads", "1"] if threads else []
    return [python, "-m", "rl_zoo3.train", *zoo, *one_thread, "--seed", str(seed), *evaluation, "-f", str(out)]


def commands(case: str, steps: int, out: Path, zoo_python: str, seed: int) -> dict[str, list[str]]:
    _, overrides, zoo, fill, others, *default_threads = CASES[case]
    rlexp = [sys.executable, "-m", "rlexp", *overrides, f"n_timesteps={steps}", f"seed={seed}"]
    zoo_run = zoo_train(zoo_python, zoo, EVAL_FREQ, EVAL_EPISODES, out / "zoo", seed)
    found = {"rlexp": [*rlexp, f"hydra.run.dir={out / 'rlexp'}"], "zoo": [*zoo_run, "-n", str(steps)]}
    if default_threads and default_threads[0]:
        zoo_default = zoo_train(zoo_python, zoo, EVAL_FREQ, EVAL_EPISODES, out / "zoo_default", seed, threads=False)
        found["zoo default threads"] = [*zoo_default, "-n", str(steps)]
    if fill is not None:
        plain = PLAIN.format(**fill, eval_episodes=EVAL_EPISODES, eval_freq=EVAL_FREQ, final_episodes=FINAL_EPISODES)
        found["plain"] = [sys.executable, "-c", plain.replace("seed=0", f"seed={seed}"), str(out / "plain"), str(steps)]
    for name, extra in others.items():
        found[name] = [*rlexp, *extra, f"hydra.run.dir={out / name.replace(' ', '_')}"]
    return found


def final_eval(run_dir: Path) -> float:
    return json.loads((run_dir / "summary.json").read_text())["final_eval"]["mean"]


def zoo_envs(
    env_id: str, n_envs: int, wrapper: str | None, vec_env: str, frame_stack: int | None, normalize: bool
) -> Any:
    """The train envs as RL Zoo's ExperimentManager builds them (make_vec_env, its wrapper, frame stack,
    VecNormalize)."""
    from stable_baselines3.common.atari_wrappers import AtariWrapper
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import (
        DummyVecEnv,
        SubprocVecEnv,
        VecFrameStack,
        VecNormalize,
        VecTransposeImage,
    )

    cls = SubprocVecEnv if vec_env == "subproc" else DummyVecEnv
    venv = make_vec_env(env_id, n_envs=n_envs, seed=0, wrapper_class=AtariWrapper if wrapper else None,
                        vec_env_cls=cls)  # fmt: skip
    if frame_stack:
        venv = VecTransposeImage(VecFrameStack(venv, frame_stack))
    return VecNormalize(venv) if normalize else venv


def rlexp_envs(case: str, kind: str) -> Any:
    import rlexp
    from rlexp.builders.envs import build_vec_env

    return build_vec_env(rlexp.compose([*CASES[case][1], f"env.vec_env={kind}"]).env, 0, None)


def steps_per_second(venv: Any, steps: int) -> float:
    """Env steps (summed over envs) per second under random actions, after a warm-up."""
    import numpy as np

    venv.reset()
    actions = np.stack([venv.action_space.sample() for _ in range(venv.num_envs)])
    for _ in range(10):
        venv.step(actions)
    start = time.perf_counter()
    for _ in range(steps // venv.num_envs):
        venv.step(actions)
    elapsed = time.perf_counter() - start
    venv.close()
    return steps // venv.num_envs * venv.num_envs / elapsed


def rollout_only(case: str, repeats: int, steps: int = 8_000) -> None:
    zoo_spec, kinds = ROLLOUT[case]
    rates: dict[str, list[float]] = {}
    for _ in range(repeats):
        rates.setdefault("zoo", []).append(steps_per_second(zoo_envs(*zoo_spec), steps))
        for kind in kinds:
            rates.setdefault(f"rlexp {kind}", []).append(steps_per_second(rlexp_envs(case, kind), steps))
    zoo = statistics.median(rates["zoo"])
    print(f"  rollout only: env steps/s under random actions, median of {repeats} ({steps:,} steps each)")
    for name, values in rates.items():
        print(f"    {name:<16} {statistics.median(values):9,.0f}   x{statistics.median(values) / zoo:.2f} the zoo's")


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
        scores: dict[str, list[float]] = {}
        with tempfile.TemporaryDirectory() as tmp:
            for i in range(args.repeats):
                out = Path(tmp) / str(i)
                out.mkdir()
                for name, command in commands(case, steps, out, args.zoo_python, seed=i).items():
                    seconds.setdefault(name, []).append(_timed(command, Path(tmp)))
                    if name.startswith("rlexp"):
                        scores.setdefault(name, []).append(final_eval(Path(command[-1].split("=", 1)[1])))
        median = {name: statistics.median(times) for name, times in seconds.items()}
        print(f"{case}, {steps:,} steps, median of {args.repeats} whole processes (seconds):", flush=True)
        for name, value in median.items():
            print(f"  {name:<20} {value:7.1f}   min {min(seconds[name]):6.1f}  max {max(seconds[name]):6.1f}")
        for name in median:
            if name.startswith("rlexp"):  # against the zoo on as many torch threads
                zoo = median["zoo default threads"] if name.endswith(" threads") else median["zoo"]
                print(f"  {name + ' / zoo':<24} {median[name] / zoo:.2f}")
                if "plain" in median:
                    print(f"  {name + ' / plain SB3':<24} {median[name] / median['plain']:.2f}")
        if "rlexp sbx" in median:
            print(f"  (rlexp sbx's first run, compiling into an empty cache: {seconds['rlexp sbx'][0]:.1f})")
            print(f"  {'rlexp sbx / rlexp':<24} {median['rlexp sbx'] / median['rlexp']:.2f}")
        for name, values in scores.items():
            print(f"  final eval {name:<14} {', '.join(f'{v:.1f}' for v in values)}")
        if case in ROLLOUT:
            rollout_only(case, args.repeats)
        print(flush=True)


if __name__ == "__main__":
    main()
