"""Same seed, same agent: rlexp against RL Zoo 2.9.2's own train.py on every tuned pair, tensor by tensor.

For each tuned pair (``rlexp list``) whose family installs here it trains the pair twice, each in a process
of its own, as their users run them: ``python -m rl_zoo3.train --algo A --env ID -n N --seed 0 --eval-freq -1
--num-threads 1`` and ``rlexp algo=A env.id=ID seed=0 n_timesteps=N torch_threads=1 callbacks.eval.freq=0
random_baseline.episodes=0``, both under OMP_NUM_THREADS=1 (torch's thread count changes how floats are
summed: with the zoo on two threads, PPO CartPole's tensors differ by 3e-7 after two updates). Then it compares every tensor
of the two saved models (policy and optimizer state, read with SB3's ``load_from_zip_file``) and, where the
pair normalizes, the VecNormalize statistics.

The budget exercises the whole pipeline at small cost: two rollouts and updates on-policy; off-policy,
``learning_starts`` lowered to 100 on both sides (the zoo's ``-params learning_starts:100``; a value that
only shapes the budget; on Atari, the replay buffer too, which the budget never fills) and two training
rounds past it; ARS, two iterations. ``--full`` runs the given
pairs at their tuned budgets instead (rows saved apart, as ``full_budget``). ``--eval`` turns evaluations on,
on both sides (rlexp's defaults: periodic evaluations, random-policy baseline, final evaluation; the zoo's
EvalCallback; both halfway through the budget, 5 episodes; rows saved apart, as ``with_evaluations``), and
also trains the zoo without them: rlexp's evaluations draw nothing from training's generators, so its
weights are those of the run without them; the zoo's stochastic evaluations (Atari, MiniGrid) sample from
torch's generator and change what the zoo then learns, which the row measures.

Where the zoo cannot make the id of its own entry here (mujoco-py's ``-v2``, panda-gym 3's ``-v3`` for the
zoo's ``-v1``), both train the id rlexp builds and the zoo reads its own entry from a ``--conf-file``
under that id. A pair whose tuned file departs from the zoo (``tuned_departures``) also runs with the
zoo's values for those keys, so that the rest is shown identical.

Each pair's row: ``identical`` (max |difference| 0.0), ``differs`` (the size), ``departure`` (the tuned
file's reason, and the size), or ``cannot run here`` (why). The rows go to benchmarks/zoo_parity.json,
which the docs' parity page (docs/hooks/benchmark_pages.py) and README's summary line are made from.

    python benchmarks/zoo_parity.py                      # every pair that installs here (~1 h on 2 cores)
    python benchmarks/zoo_parity.py --pair ppo_cartpole --pair sac_pendulum
    python benchmarks/zoo_parity.py --family minigrid --jobs 2
    python benchmarks/zoo_parity.py --pair ppo_cartpole --full --no-save
    nox -s zoo-parity -- --family classic
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from rlexp.config.algorithms import ALGORITHMS, algorithm
from rlexp.config.schema import OnPolicyConfig
from rlexp.zoo.format import zoo_dir

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "zoo_parity.json"
SEED = 0
ATARI_BUFFER = 10_000  # off-policy on Atari: the replay buffer's size on both sides, where larger
LEARNING_STARTS = 100  # off-policy: where training starts on both sides, when the tuned value is larger
SECTIONS = ("pairs", "full_budget", "with_evaluations")  # the short budgets, --full, --eval
EVAL_EPISODES = 5  # --eval: both sides' periodic evaluations, halfway through the budget (and at its end)
ATARI_ID = "BreakoutNoFrameskip-v4"  # the game the zoo's `atari` entry is run on
ZOO_DEFAULTS = {"n_envs": 1}  # the zoo's value of a key its entry leaves out
ON_POLICY = {a.name for a in ALGORITHMS if issubclass(a.schema, OnPolicyConfig)}


@dataclass
class Case:
    """One pair's two commands: what both train, on what budget, with which shared changes."""

    pair: str
    algo: str
    family: str
    zoo_entry: str  # the id of the zoo's entry (hyperparams/<algo>.yml)
    env_id: str  # the id both train
    budget: int
    full_budget: int  # the tuned n_timesteps
    n_envs: int
    zoo_params: dict[str, Any] = field(default_factory=dict)  # -params key:value
    overrides: list[str] = field(default_factory=list)  # rlexp's for the same values
    conf: dict[str, Any] | None = None  # the zoo's entry under env_id (a --conf-file), where it cannot make its id
    note: str = ""


def zoo_algo(algo: str) -> str:
    """The zoo's name of rlexp's algorithm (its --algo and hyperparams/<name>.yml)."""
    return str(algorithm(algo).zoo)


def zoo_hyperparams(algo: str) -> dict[str, Any]:
    """The zoo's own YAML for an algorithm, from the installed rl_zoo3 (read as a file: no zoo code runs here)."""
    return yaml.safe_load((zoo_dir() / f"{zoo_algo(algo)}.yml").read_text())


def _makeable(env_id: str) -> str | None:
    """None when gymnasium makes ``env_id`` here, else why not."""
    import gymnasium as gym

    from rlexp.config.env_families import register_family

    try:
        register_family(env_id)
        gym.make(env_id).close()
    except Exception as err:  # (any failure to build: the id stays the zoo's business)
        return f"{type(err).__name__}: {str(err).splitlines()[0][:120]}"
    return None


def plan(pair: Any, installed: dict[str, bool]) -> Case | str:
    """The case of a tuned pair (rlexp.config.tuned.TunedPair), or why it cannot run here."""
    import rlexp

    if not installed.get(pair.family, True):
        return f"the {pair.family} family is not installed here (rlexp[{pair.family}])"
    entry = pair.source.split()[-1]
    env_id = ATARI_ID if entry == "atari" else entry
    conf = None
    note = ""
    why = _makeable(env_id)
    if why is not None:
        if _makeable(pair.env_id) is not None:
            return f"neither {env_id} nor {pair.env_id} builds here ({why})"
        conf = {pair.env_id: zoo_hyperparams(pair.algo)[entry]}
        note = f"the zoo cannot make {entry} here; both train {pair.env_id}, the zoo from its {entry} entry"
        env_id = pair.env_id
    cfg = rlexp.compose([f"algo={pair.algo}", f"env.id={env_id}"])
    n_envs = int(cfg.env.n_envs)
    params: dict[str, Any] = {}
    if pair.algo in ON_POLICY:
        # (the entry's n_steps, or where it has none the algorithm's default: the zoo's, SB3's)
        budget = 2 * int(cfg.algo.n_steps) * n_envs
    elif pair.algo == "ars":
        budget = 0  # two iterations: measured by a first rlexp run (see _ars_budget)
    else:
        starts = int(cfg.algo.learning_starts)
        if starts > LEARNING_STARTS:
            params["learning_starts"] = starts = LEARNING_STARTS
        # a replay buffer of Atari frames that the budget never fills, allocated whole by the zoo (QR-DQN's 1M
        # frames: 26 GiB, refused here): smaller on both sides, the same samples drawn
        if pair.family == "atari" and int(cfg.algo.get("buffer_size", 0)) > ATARI_BUFFER:
            params["buffer_size"] = ATARI_BUFFER
        freq = cfg.algo.get("train_freq", 1)
        every, unit = (int(freq[0]), str(freq[1])) if not isinstance(freq, int) else (int(freq), "step")
        # an "episode" round ends with an episode: a TimeLimit's length at most
        episode = 1 if unit == "step" else _episode_limit(env_id)
        budget = starts + 2 * every * episode * n_envs + n_envs
    overrides = [f"algo.{key}={value}" for key, value in params.items()]
    for key in pair.departures:  # the zoo's value of each key rlexp departs in, on rlexp's side too
        name = key.rsplit(".", 1)[-1]
        zoo_value = zoo_hyperparams(pair.algo)[entry].get(name, ZOO_DEFAULTS.get(name))
        overrides.append(f"{key}={zoo_value}")
    return Case(
        pair.file,
        pair.algo,
        pair.family,
        entry,
        env_id,
        budget,
        int(cfg.n_timesteps),
        n_envs,
        params,
        overrides,
        conf,
        note,
    )


def _episode_limit(env_id: str) -> int:
    import gymnasium as gym

    spec = gym.spec(env_id)
    return int(spec.max_episode_steps or 1000)


def eval_freq(case: Case, budget: int) -> int:
    """--eval: steps between evaluations on both sides (a multiple of n_envs: both count calls per env)."""
    return max(budget // 2 // case.n_envs, 1) * case.n_envs


def zoo_command(case: Case, out: Path, budget: int, evaluate: bool, logs: str = "zoo") -> list[str]:
    command = [sys.executable, "-m", "rl_zoo3.train", "--algo", zoo_algo(case.algo), "--env",
               case.env_id, "-n", str(budget), "--seed", str(SEED), "--num-threads", "1", "-f", str(out / logs),
               "--log-interval", "-1"]  # fmt: skip
    if evaluate:
        freq = eval_freq(case, budget)
        command += ["--eval-freq", str(freq), "--eval-episodes", str(EVAL_EPISODES), "--n-eval-envs", "1"]
    else:
        command += ["--eval-freq", "-1"]
    if case.zoo_params:
        command += ["--hyperparams", *(f"{k}:{v}" for k, v in case.zoo_params.items())]
    if case.conf is not None:
        conf = out / "zoo_conf.yml"
        conf.write_text(yaml.safe_dump(case.conf))
        command += ["--conf-file", str(conf)]
    return command


def rlexp_command(case: Case, run_dir: Path, budget: int, evaluate: bool, departures: bool = True) -> list[str]:
    overrides = case.overrides if departures else case.overrides[: len(case.zoo_params)]
    # --eval: rlexp's defaults (its periodic evaluations, random baseline and final evaluation) at the zoo's schedule
    evaluation = [f"callbacks.eval.freq={eval_freq(case, budget)}", f"callbacks.eval.n_episodes={EVAL_EPISODES}"] if (
        evaluate) else ["callbacks.eval.freq=0", "random_baseline.episodes=0"]  # fmt: skip
    return [sys.executable, "-m", "rlexp", f"algo={case.algo}", f"env.id={case.env_id}", f"seed={SEED}",
            f"n_timesteps={budget}", "torch_threads=1", "curves=false", *evaluation, *overrides,
            f"hydra.run.dir={run_dir}"]  # fmt: skip


def _run(command: list[str], log: Path) -> None:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONHASHSEED": "0"}
    with log.open("w") as out:
        result = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=log.parent)
    if result.returncode != 0:
        tail = [line for line in log.read_text().splitlines() if line.strip()][-1:] or ["(no output)"]
        raise RuntimeError(f"{Path(command[2]).name if command[1] == '-m' else command[0]} exit {result.returncode}: "
                           f"{tail[0][:300]}")  # fmt: skip


def _tensors(node: Any, prefix: str = "") -> dict[str, Any]:
    import torch

    if isinstance(node, torch.Tensor):
        return {prefix: node}
    if isinstance(node, dict):
        return {k: v for key, value in node.items() for k, v in _tensors(value, f"{prefix}/{key}").items()}
    if isinstance(node, (list, tuple)):
        return {k: v for i, value in enumerate(node) for k, v in _tensors(value, f"{prefix}/{i}").items()}
    return {}


def model_difference(a: Path, b: Path) -> tuple[float, int]:
    """The largest |difference| over every tensor the two model zips save (policy and optimizer state), and
    how many tensors; a tensor on one side only is infinitely different."""
    from stable_baselines3.common.save_util import load_from_zip_file

    # params (policy, optimizers) and pytorch_variables (SAC's and TQC's log_ent_coef)
    first = _tensors(load_from_zip_file(a, device="cpu", load_data=False)[1:])
    second = _tensors(load_from_zip_file(b, device="cpu", load_data=False)[1:])
    if first.keys() != second.keys():
        return float("inf"), len(first)
    worst = 0.0
    for key, tensor in first.items():
        other = second[key]
        if tensor.shape != other.shape:
            return float("inf"), len(first)
        if tensor.numel():
            worst = max(worst, (tensor.double() - other.double()).abs().max().item())
    return worst, len(first)


def vecnormalize_difference(a: Path, b: Path) -> float:
    """The largest |difference| of two VecNormalize files' running statistics (both the harness's own files)."""
    import numpy as np

    def stats(path: Path) -> dict[str, Any]:
        with path.open("rb") as f:
            norm = pickle.load(f)
        found = {}
        for name in ("obs_rms", "ret_rms"):
            rms = norm.__dict__.get(name)  # (no obs_rms where norm_obs=False: VecNormalize's getattr would recurse)
            if rms is None:
                continue
            items = rms.items() if isinstance(rms, dict) else [("", rms)]
            for key, r in items:
                found.update({f"{name}{key}.mean": r.mean, f"{name}{key}.var": r.var, f"{name}{key}.count": r.count})
        return found

    first, second = stats(a), stats(b)
    if first.keys() != second.keys():
        return float("inf")
    return max(float(np.max(np.abs(np.asarray(first[k], float) - np.asarray(second[k], float)))) for k in first)


def _ars_budget(case: Case, scratch: Path) -> int:
    """ARS's budget for two iterations: the steps its first iteration takes (an rlexp run of budget 1), + 1."""
    run_dir = scratch / "ars_probe"
    _run(rlexp_command(case, run_dir, 1, evaluate=False), scratch / "ars_probe.log")
    return int(json.loads((run_dir / "summary.json").read_text())["steps_done"]) + 1


def run_case(case: Case, scratch: Path, full: bool, evaluate: bool) -> dict[str, Any]:
    """Train both sides and compare; the row of the table."""
    shutil.rmtree(scratch, ignore_errors=True)  # (the zoo numbers its runs: a stale one would be found first)
    scratch.mkdir(parents=True)
    started = time.perf_counter()
    if full:
        budget = case.full_budget
    else:
        budget = case.budget or _ars_budget(case, scratch)
    row: dict[str, Any] = {"pair": case.pair, "algo": case.algo, "family": case.family, "zoo_entry": case.zoo_entry,
                           "env_id": case.env_id, "steps": budget, "shared": case.zoo_params, "note": case.note,
                           "eval": evaluate}  # fmt: skip
    try:
        _run(zoo_command(case, scratch, budget, evaluate), scratch / "zoo.log")
        zoo_dir = scratch / "zoo" / zoo_algo(case.algo) / f"{case.env_id}_1"
        _run(rlexp_command(case, scratch / "rlexp_run", budget, evaluate), scratch / "rlexp.log")
    except RuntimeError as err:
        return {**row, "verdict": "failed", "why": str(err), "seconds": round(time.perf_counter() - started, 1)}
    diff, tensors = model_difference(zoo_dir / f"{case.env_id}.zip", scratch / "rlexp_run" / "model.zip")
    row.update(max_abs_diff=diff, tensors=tensors)
    zoo_norm, rlexp_norm = zoo_dir / case.env_id / "vecnormalize.pkl", scratch / "rlexp_run" / "vecnormalize.pkl"
    if zoo_norm.is_file() or rlexp_norm.is_file():
        norm = vecnormalize_difference(zoo_norm, rlexp_norm) if zoo_norm.is_file() and rlexp_norm.is_file() else None
        row["vecnormalize_diff"] = float("inf") if norm is None else norm
        diff = max(diff, row["vecnormalize_diff"])
    if case.overrides[len(case.zoo_params) :]:  # a departure: also rlexp's own values, against the zoo's
        own = scratch / "rlexp_departing_run"
        _run(rlexp_command(case, own, budget, evaluate, departures=False), scratch / "rlexp_departing.log")
        row["departure_diff"] = model_difference(zoo_dir / f"{case.env_id}.zip", own / "model.zip")[0]
        row["departures"] = case.overrides[len(case.zoo_params) :]
        row["verdict"] = "departure"
    else:
        row["verdict"] = "identical" if diff == 0.0 else "differs"
    if evaluate:  # is a difference the zoo's evaluations changing its own training?
        _run(zoo_command(case, scratch, budget, False, logs="zoo_plain"), scratch / "zoo_plain.log")
        plain = scratch / "zoo_plain" / zoo_algo(case.algo) / f"{case.env_id}_1" / f"{case.env_id}.zip"
        row["zoo_eval_changes_zoo"] = model_difference(zoo_dir / f"{case.env_id}.zip", plain)[0]
        row["rlexp_vs_zoo_without_eval"] = model_difference(plain, scratch / "rlexp_run" / "model.zip")[0]
        row["eval_freq"] = eval_freq(case, budget)
        if row["verdict"] == "differs" and row["rlexp_vs_zoo_without_eval"] == 0.0 < row["zoo_eval_changes_zoo"]:
            row["verdict"] = "zoo's evaluations"  # (they changed the zoo's training; rlexp's did not change its)
    row["seconds"] = round(time.perf_counter() - started, 1)
    return row


# why a family's pairs are not identical, or cannot run here: the row's reason where the harness finds no other
REASONS = {
    "panda": (
        "panda-gym 3.0.7 re-seeds each unseeded reset from the OS (`seeding.np_random(None)`: every episode's goal "
        "after the first), so the zoo's runs do not repeat themselves; rlexp's panda presets seed every reset from "
        "the run's seed (`SeededResets`), so that rlexp's do"
    ),
    "trpo_cartpole": (
        "rlexp steps CartPole with gymnasium's NumPy vector CartPole by default (env.vec_env=auto, for speed), whose "
        "batched np.cos/np.sin can round a last bit otherwise than the single env's math.cos/math.sin that the zoo's "
        "DummyVecEnv steps; with env.vec_env=dummy: identical (measured). PPO, A2C and DQN CartPole are identical "
        "with it, at their full budgets too"
    ),
    "robotics": (
        "gymnasium-robotics 1.4.2 fails under mujoco >= 3.11, which the other families install: rlexp[robotics] "
        "pins mujoco below it and is not installed beside them here"
    ),
}


def reason(row: dict[str, Any]) -> str:
    """What the table says of a row that is not identical."""
    if row["verdict"] == "departure":
        return (f"rlexp's tuned file departs in {', '.join(k.split('=')[0] for k in row['departures'])} (its comment "
                f"says why); with the zoo's values there: identical")  # fmt: skip
    if row["verdict"] == "zoo's evaluations":
        return "the zoo's stochastic evaluations change its own training; rlexp's with evaluations = the zoo's without"
    return REASONS.get(row["pair"]) or REASONS.get(row["family"]) or row.get("why") or ""


def summary(record: dict[str, Any]) -> str:
    """README's one line on parity (a docs test compares it with the JSON)."""
    rows = list(record["pairs"].values())
    count = {verdict: sum(r["verdict"] == verdict for r in rows) for verdict in ("identical", "departure")}
    gone = sum(r["verdict"] in ("cannot run here", "failed") for r in rows)
    unrun = sum(r["verdict"] == "not run" for r in rows)
    ran = len(rows) - gone - unrun
    text = (
        f"{count['identical']} of the {ran} tuned pairs that install here train RL Zoo's very agent, tensor for tensor"
    )
    if count["departure"]:
        text += f", {count['departure']} more with the zoo's values where rlexp's tuned file departs from them"
    rest = ran - count["identical"] - count["departure"]
    text += (f"; {rest} differ, each for a reason named" if rest else "") + f"; {gone} cannot run here"
    return text + (f"; {unrun} not measured yet" if unrun else "")


def _size(value: float | None) -> str:
    return "-" if value is None else "0" if value == 0 else f"{value:.2g}"


EXTRA_SECTIONS = {
    "full_budget": ("At the tuned budget", "The same comparison at each pair's tuned `n_timesteps` (`--full`)."),
    "with_evaluations": (
        "With evaluations on",
        "rlexp's defaults (periodic evaluations, the random-policy baseline, the final evaluation) against the zoo's "
        "EvalCallback at the same steps and episodes (`--eval`), and the zoo again without it. rlexp's evaluations "
        "draw nothing from training's random generators, so its weights are those of the run without them; the "
        "zoo's stochastic evaluations (Atari, MiniGrid) sample from torch's generator and change what the zoo then "
        "learns.",
    ),
}


def _breakable(pair: str) -> str:
    """A pair's name that a narrow column may wrap after an underscore (as HTML: Markdown would read ``_``)."""
    return pair.replace("_", "&#95;<wbr>")


def page(record: dict[str, Any]) -> str:
    """docs/reference/zoo-parity.md (made at every site build from benchmarks/zoo_parity.json)."""
    rows = list(record["pairs"].values())
    versions = ", ".join(f"{name} {v}" for name, v in record["versions"].items())
    out = [
        "# Parity with RL Zoo",
        "",
        f"**{summary(record)}.** Each tuned pair is trained twice, in processes of their own: by RL Zoo's own",
        "`python -m rl_zoo3.train --algo A --env ID -n N --seed 0 --eval-freq -1 --num-threads 1` and by",
        "`rlexp algo=A env.id=ID seed=0 n_timesteps=N torch_threads=1 callbacks.eval.freq=0",
        "random_baseline.episodes=0`, and every tensor of the two saved models (policy and optimizer state) and the",
        "VecNormalize statistics are compared. The budget N exercises the whole pipeline: two rollouts and",
        "updates on-policy; off-policy, `learning_starts` lowered to 100 on both sides (the zoo's `-params",
        "learning_starts:100`; on Atari, `buffer_size` 10,000, which the budget never fills) and two training",
        "rounds past it; ARS, two iterations. Both run on one torch thread",
        "(`OMP_NUM_THREADS=1`): with the zoo on torch's default two threads, PPO CartPole's tensors differ by",
        "3e-7 after two updates, as float sums change order.",
        "",
        f"Generated from `benchmarks/zoo_parity.json` ({versions}), written by `nox -s zoo-parity`",
        "(`benchmarks/zoo_parity.py`; `--pair`, `--family` run a part of it). `tests/zoo/test_zoo_parity.py`",
        "asserts a pair of every family and algorithm in CI.",
        "",
        "## By family",
        "",
        "| family | pairs | identical | not identical | cannot run here | not measured yet |",
        "|---|---|---|---|---|---|",
    ]
    families: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        families.setdefault(row["family"], []).append(row)
    for family, group in sorted(families.items(), key=lambda item: -len(item[1])):
        same = sum(r["verdict"] == "identical" for r in group)
        gone = sum(r["verdict"] == "cannot run here" for r in group)
        unrun = sum(r["verdict"] == "not run" for r in group)
        out.append(f"| {family} | {len(group)} | {same} | {len(group) - same - gone - unrun} | {gone} | {unrun} |")
    odd = [r for r in rows if r["verdict"] not in ("identical", "not run")]
    if odd:
        out += [
            "",
            "## Not identical, and why",
            "",
            "| pair | verdict | max abs difference | why |",
            "|---|---|---|---|",
        ]
        for r in odd:
            size = r.get("departure_diff", r.get("max_abs_diff"))
            out.append(f"| {_breakable(r['pair'])} | {r['verdict']} | {_size(size)} | {reason(r)} |")
    for section, (title, text) in EXTRA_SECTIONS.items():
        extra = list(record.get(section, {}).values())
        if not extra:
            continue
        evaluations = section == "with_evaluations"
        head = ["pair", "steps", "verdict", "max abs difference"]
        head += ["rlexp against the zoo without evaluations"] if evaluations else []
        out += ["", f"## {title}", "", text, "", "| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
        for r in extra:
            cells = [_breakable(r["pair"]), f"{r['steps']:,}", r["verdict"], _size(r.get("max_abs_diff"))]
            cells += [_size(r.get("rlexp_vs_zoo_without_eval"))] if evaluations else []
            out.append("| " + " | ".join(cells) + " |")
    out += ["", "## Every pair", "", "The env id trained is the zoo's entry's, but where a row names the entry (in brackets).", "",
            "| pair | env id trained | steps | result |", "|---|---|---|---|"]  # fmt: skip
    for r in rows:
        steps = f"{r['steps']:,}" if "steps" in r else "-"
        trained = r["env_id"] if r["zoo_entry"] in (r["env_id"], "atari") else f"{r['env_id']} ({r['zoo_entry']})"
        size = r.get("departure_diff", r.get("max_abs_diff"))
        plain = ("identical", "cannot run here", "not run")
        result = r["verdict"] if r["verdict"] in plain else f"{r['verdict']}, {_size(size)}"
        out.append(f"| {_breakable(r['pair'])} | {trained} | {steps} | {result} |")
    noted = [r for r in rows if r.get("note")]
    if noted:
        out += ["", "Where the zoo cannot make its own entry's id here (mujoco-py's `-v2`, panda-gym 3's `-v3` for the",
                "zoo's `-v1`), both train the id rlexp builds and the zoo reads its own entry from a `--conf-file`:",
                ", ".join(f"`{r['pair']}`" for r in noted) + "."]  # fmt: skip
    return "\n".join([*out, ""])


def installed_families() -> dict[str, bool]:
    from rlexp.config.env_families import FAMILIES

    return {f.name: f.module is None or importlib.util.find_spec(f.module) is not None for f in FAMILIES}


def main() -> None:
    global RESULTS  # (--results: the file save() writes)
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pair", action="append", help="a tuned pair (conf/tuned/<pair>.yaml); repeatable")
    parser.add_argument("--family", action="append", help="only this env family; repeatable")
    parser.add_argument("--algo", action="append", help="only this algorithm; repeatable")
    parser.add_argument("--full", action="store_true", help="the tuned budgets (saved apart)")
    parser.add_argument("--eval", action="store_true", help="evaluations on, on both sides (saved apart)")
    parser.add_argument("--jobs", type=int, default=1, help="pairs at a time (each side on one thread)")
    parser.add_argument("--no-save", action="store_true", help="print the rows, leave zoo_parity.json as it is")
    parser.add_argument("--keep", type=Path, help="keep the runs under this dir")
    parser.add_argument("--resume", action="store_true", help="skip the pairs zoo_parity.json holds already")
    parser.add_argument("--mark-missing", action="store_true",
                        help="run nothing: give each tuned pair the JSON lacks a 'not run' row (a sweep cut short)")  # fmt: skip
    parser.add_argument("--results", type=Path, default=RESULTS, help="the JSON to write (default: %(default)s)")
    args = parser.parse_args()
    RESULTS = args.results.resolve()

    from rlexp.config.tuned import tuned_pairs

    pairs = [p for p in tuned_pairs() if (not args.pair or p.file in args.pair)
             and (not args.family or p.family in args.family) and (not args.algo or p.algo in args.algo)]  # fmt: skip
    if args.pair and len(pairs) != len(args.pair):
        known = {p.file for p in tuned_pairs()}
        raise SystemExit(f"unknown pair(s): {', '.join(sorted(set(args.pair) - known))} (rlexp list shows them)")
    if args.mark_missing:
        done = json.loads(RESULTS.read_text())["pairs"] if RESULTS.is_file() else {}
        why = "not measured by the last sweep (its time ran out): nox -s zoo-parity -- --resume measures it"
        save({p.file: {"pair": p.file, "algo": p.algo, "family": p.family, "verdict": "not run", "why": why,
                       "zoo_entry": p.source.split()[-1], "env_id": p.env_id}
              for p in pairs if p.file not in done})  # fmt: skip
        return
    if args.resume and RESULTS.is_file():
        section_now = "full_budget" if args.full else "with_evaluations" if args.eval else "pairs"
        done = json.loads(RESULTS.read_text()).get(section_now, {})
        pairs = [p for p in pairs if p.file not in done or done[p.file]["verdict"] in ("failed", "not run")]
    installed = installed_families()
    scratch = args.keep or Path(tempfile.mkdtemp(prefix="zoo_parity_"))
    rows: dict[str, dict[str, Any]] = {}

    cases = [(pair, plan(pair, installed)) for pair in pairs]  # (composing is not thread-safe: first, in turn)

    def one(pair: Any, case: Case | str) -> dict[str, Any]:
        if isinstance(case, str):
            return {"pair": pair.file, "algo": pair.algo, "family": pair.family, "verdict": "cannot run here",
                    "why": case, "zoo_entry": pair.source.split()[-1], "env_id": pair.env_id}  # fmt: skip
        try:
            return run_case(case, scratch / pair.file, args.full, args.eval)
        except Exception as err:  # (one pair's surprise is its row, not the end of a long sweep)
            return {"pair": pair.file, "algo": pair.algo, "family": pair.family, "verdict": "failed",
                    "why": f"{type(err).__name__}: {str(err)[:200]}", "zoo_entry": case.zoo_entry,
                    "env_id": case.env_id}  # fmt: skip

    # cheapest first, so that a sweep cut short has measured the most pairs: ARS (two iterations, the longest)
    # and recurrent PPO (an LSTM over many envs) last, the rest by budget
    cases.sort(key=lambda item: (item[0].algo == "ars", item[0].algo == "recurrent_ppo",
                                 item[1].budget if isinstance(item[1], Case) else 0))  # fmt: skip
    save_as_it_goes = not args.no_save
    section = "full_budget" if args.full else "with_evaluations" if args.eval else "pairs"
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for row in pool.map(lambda item: one(*item), cases):
            rows[row["pair"]] = row
            if save_as_it_goes:  # (a long sweep cut short keeps what it measured)
                save({row["pair"]: row}, quiet=True, section=section)
            size = row.get("departure_diff", row.get("max_abs_diff"))
            said = row.get("why", row.get("note", ""))
            if "zoo_eval_changes_zoo" in row:
                said = (f"the zoo's evaluations change its weights by {row['zoo_eval_changes_zoo']:.3g}; rlexp's with "
                        f"evaluations against the zoo's without: {row['rlexp_vs_zoo_without_eval']:.3g} {said}")  # fmt: skip
            print(f"{row['pair']:40} {row['verdict']:16} {'' if size is None else f'{size:.3g}':10} "
                  f"{row.get('steps', ''):>8} {row.get('seconds', ''):>7} {said}",
                  flush=True)  # fmt: skip
    if not args.keep:
        shutil.rmtree(scratch, ignore_errors=True)
    if save_as_it_goes:
        print(f"wrote {RESULTS} ({len(rows)} pairs run)")


def save(rows: dict[str, dict[str, Any]], quiet: bool = False, section: str = "pairs") -> None:
    """Merge the rows into zoo_parity.json's ``section`` (pairs not run keep their rows), with the versions
    that made them."""
    from importlib.metadata import version

    previous = json.loads(RESULTS.read_text()) if RESULTS.is_file() else {}
    sections = {name: previous.get(name, {}) for name in SECTIONS}
    sections[section] = dict(sorted({**sections[section], **rows}.items()))
    packages = ("rl_zoo3", "stable_baselines3", "sb3_contrib", "torch", "gymnasium", "numpy")
    record = {
        "format": 1,
        "versions": {name: version(name) for name in packages},
        "threads": 1,
        "seed": SEED,
        **sections,
    }
    RESULTS.write_text(json.dumps(record, indent=1, sort_keys=False) + "\n")
    if not quiet:
        print(f"wrote {RESULTS} ({len(sections[section])} pairs)")


if __name__ == "__main__":
    main()
