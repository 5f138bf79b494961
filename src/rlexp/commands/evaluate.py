"""Score a saved agent over many episodes, with 95% bootstrap confidence intervals of the mean and IQM.

The env is rebuilt as the run built its eval envs (preset, kwargs, eval kwargs, wrappers, frame stack,
the agent's VecNormalize statistics, never updated). With the defaults (envs side by side as the run's
evaluations counted them, seed = the run's seed + 10000, the run's deterministic setting)
``--episodes <callbacks.eval.final_episodes>`` plays the run's final evaluation again and reproduces its
``final_eval``. Writes
``<out>/eval/<agent>_seed<S>_n<N>[_envs<K>][_stochastic].csv`` (one row per episode) and ``.json``.
"""

from __future__ import annotations

import argparse
import csv
import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rlexp.commands.arguments import add_agent_arguments, positive_int

if TYPE_CHECKING:  # the run modules import SB3: loaded once the arguments are good
    from rlexp.rundir.agents import SavedAgent


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_agent_arguments(parser, episodes=100, verb="run")
    parser.add_argument(
        "--n-envs",
        type=positive_int,
        help="envs stepped side by side (default: as the run's evaluations, one per episode up to 16)",
    )


@dataclass
class Episodes:
    returns: list[float] = field(default_factory=list)
    lengths: list[int] = field(default_factory=list)
    successes: list[bool] = field(default_factory=list)  # empty unless the env reports is_success
    step: int = 0  # the agent's training steps (its num_timesteps)


def run_episodes(agent: SavedAgent, episodes: int, seed: int, deterministic: bool, n_envs: int) -> Episodes:
    """``episodes`` episodes of the agent; env i of ``n_envs`` is seeded ``seed + i``."""
    from stable_baselines3.common.evaluation import evaluate_policy

    from rlexp.builders.envs import build_vec_env, closed_at_end
    from rlexp.loading.agent import load_saved_agent

    out = Episodes()

    def record_success(local: dict[str, Any], _: dict[str, Any]) -> None:
        # called for each env that still counts an episode, before evaluate_policy counts a finished one
        info = local["info"]
        if local["done"] and (not local["is_monitor_wrapped"] or "episode" in info) and "is_success" in info:
            out.successes.append(bool(info["is_success"]))

    env_cfg = agent.cfg.env
    with closed_at_end(
        build_vec_env(env_cfg, agent.cfg.seed, None, agent.stats, for_eval=True, n_envs=n_envs, trust=agent.trust)
    ) as env:
        env.seed(seed)
        model = load_saved_agent(agent, plays=env)
        out.step = int(model.num_timesteps)
        model.set_random_seed(seed)  # --stochastic: the same actions sampled again
        returns, lengths = evaluate_policy(
            model,
            env,
            n_eval_episodes=episodes,
            deterministic=deterministic,
            return_episode_rewards=True,
            callback=record_success,
        )
    out.returns, out.lengths = [float(r) for r in returns], [int(n) for n in lengths]  # type: ignore[union-attr]  # (lists: return_episode_rewards)
    if len(out.successes) != len(out.returns):  # reported for some episodes only: not a success rate
        out.successes = []
    return out


def _csv(episodes: Episodes) -> str:
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(["episode", "return", "length", *(["is_success"] if episodes.successes else [])])
    for i, (r, n) in enumerate(zip(episodes.returns, episodes.lengths, strict=True)):
        writer.writerow([i, repr(r), n, *([int(episodes.successes[i])] if episodes.successes else [])])
    return text.getvalue()


def _interval(ci: list[float] | None) -> str:
    return f"95% CI [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "(one episode: no CI)"


def main(args: argparse.Namespace) -> int:
    record, out = score(args)
    _print(record, out)
    return 0


def score(args: argparse.Namespace) -> tuple[dict[str, Any], Path]:
    """Plays and scores the episodes; returns the record written to ``<out>.json`` and ``out``."""
    from rlexp.cluster.cpus import job_threads
    from rlexp.files.atomic import atomic_write_json, atomic_write_text
    from rlexp.lifecycle.state import status_now, unfinished
    from rlexp.rundir.checksums import sha256
    from rlexp.rundir.contract import EVALUATE_DIR, RUNNING
    from rlexp.rundir.record import read_record
    from rlexp.stats.scores import summarize
    from rlexp.zoo.saved_agents import open_agent  # (rlexp run dirs and RL Zoo log folders)

    agent = open_agent(args.run, args.agent, args.trust)
    # what was scored: the agent's bytes now (a run still training may replace best/ or the final agent)
    checksum = sha256(agent.model)
    run = read_record(agent.out_dir)
    status = None if run is None else status_now(run, agent.out_dir)
    import torch

    torch.set_num_threads(job_threads(agent.cfg.torch_threads))
    seed, deterministic = agent.episode_seed(args.seed), agent.deterministic(args.stochastic)
    n_envs = args.n_envs or agent.eval_envs(args.episodes)
    episodes = run_episodes(agent, args.episodes, seed, deterministic, n_envs)
    score = summarize(episodes.returns, episodes.successes or None, seed=seed)
    score["mean_length"] = sum(episodes.lengths) / len(episodes.lengths)
    record = {
        "agent": agent.name,
        "model": str(agent.model),
        "agent_step": episodes.step,
        "agent_sha256": checksum,
        "run_status": status,
        "seed": seed,
        "n_envs": n_envs,
        "deterministic": deterministic,
        **score,
    }
    stem = f"{agent.name}_seed{seed}_n{args.episodes}"
    stem += (f"_envs{n_envs}" if n_envs > 1 else "") + ("" if deterministic else "_stochastic")
    out = agent.out_dir / EVALUATE_DIR / stem
    atomic_write_text(out.with_suffix(".csv"), _csv(episodes))
    atomic_write_json(out.with_suffix(".json"), record)
    if status == RUNNING:
        record["note"] = (
            f"the run is still training: this scored its {agent.name} agent of step {episodes.step:,} "
            f"(sha256 {checksum[:12]}), which training may replace"
        )
    elif run is not None and (left := unfinished(run, agent.out_dir)) is not None:
        record["note"] = f"this scored its {agent.name} agent of step {episodes.step:,}; {left}"
    return record, out


def _print(record: dict[str, Any], out: Path) -> None:
    from rlexp.stats.aggregates import IQM, MEAN, MEDIAN, STD

    mode = "deterministic" if record["deterministic"] else "stochastic"
    print(
        f"rlexp: {record['agent']} agent (step {record['agent_step']:,}), {record['episodes']} episodes "
        f"(seed {record['seed']}, {mode})"
    )
    if "note" in record:
        print(f"rlexp: note: {record['note']}")
    for statistic in (MEAN, IQM):
        print(f"  {statistic.label:<8}{record[statistic.name]:10.2f}   {_interval(record[f'ci95_{statistic.name}'])}")
    print(
        f"  {MEDIAN.label:<8}{record[MEDIAN.name]:10.2f}   {STD.label} {record[STD.name]:.2f}, min {record['min']:.2f}, "
        f"max {record['max']:.2f}, mean length {record['mean_length']:.1f}"
    )
    if "success_rate" in record:
        print(f"  success {record['success_rate']:10.2%}   {_interval(record['ci95_success_rate'])}")
    print(f"  episodes in {out.with_suffix('.csv')}, summary in {out.with_suffix('.json')}")
