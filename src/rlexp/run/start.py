"""The start of a run: what it will train with said in a line each, torch's threads set, and its record
opened: new, with config.yaml and command.txt, or the record of the run it continues in that dir; then,
for a new run, what its agent must beat and its step budget."""

from __future__ import annotations

import logging
import shlex
from pathlib import Path
from typing import Any

import torch
from stable_baselines3.common.base_class import BaseAlgorithm

from rlexp.builders.backends import algo_target, is_sbx
from rlexp.builders.envs import closed_at_end, one_env
from rlexp.cluster.cpus import cnn_on_envpool, job_threads
from rlexp.config.plain import plain_dict
from rlexp.config.schema import ExperimentConfig
from rlexp.config.tuned import tuned_note
from rlexp.lifecycle.preemption import StopOnSignal
from rlexp.lifecycle.resume import ResumePoint
from rlexp.lifecycle.state import resumable_run, unfinished_before
from rlexp.monitor.baseline import random_baseline
from rlexp.monitor.evaluation import schedule_note
from rlexp.run.budget import budget_note, rollout_steps, true_steps
from rlexp.rundir.contract import write_config
from rlexp.rundir.record import RunRecord
from rlexp.vecenvs.choice import vec_env_note

log = logging.getLogger("rlexp.run.manager")  # (the run's own lines, under one name)


def start_run(
    cfg: ExperimentConfig,
    run_dir: Path,
    choices: dict[str, Any],
    command: list[str],
    rerun: list[str],
    warnings: list[str],
    trial: tuple[int, dict[str, Any]] | None = None,
) -> tuple[RunRecord, ResumePoint | None]:
    """The run's record, new or of the run it continues (and where that stopped), written to the run dir.
    ``trial``: a search trial's number and sampled values, which its first line says."""
    config = plain_dict(cfg)  # (the whole, as data: compared with earlier runs', written as config.yaml)
    previous = resumable_run(config, run_dir)
    left = unfinished_before(config, run_dir) if previous is None else None  # a new run, after a killed one
    if left is not None:  # (which run it leaves behind, and how that one goes on)
        log.warning(left.rerun_line())
    if trial is not None:
        number, params = trial
        sampled = ", ".join(f"{key}={_shown(value)}" for key, value in params.items())
        log.info("search trial %d trains with its sampled values: %s", number, sampled or "none")
    note = tuned_note(
        choices,
        env_id=cfg.env.id,
        tuned_file=cfg.tuned_file,
        tuned_env_id=cfg.tuned_env_id,
        tuned_source=cfg.tuned_source,
        tuned_departures=cfg.tuned_departures,
    )
    log.info(note + (", under the trial's sampled values" if trial and trial[1] else ""))
    log.info(vec_env_note(cfg.env))
    for warning in warnings:
        log.warning(warning)
    threads = job_threads(cfg.torch_threads, cnn_on_envpool(cfg.env.vec_env, str(cfg.algo.policy)))
    torch.set_num_threads(threads)
    if previous is None:
        write_config(run_dir, config, shlex.join(rerun))
        record, resume = _new_record(cfg, choices, run_dir, command, threads, warnings), None
    else:
        record, resume = previous
        record.resume(resume.step, threads, is_sbx(cfg.backend), run_dir)
        log.info("resuming the run in %s from step %d (%s)", run_dir, resume.step, resume.path.name)
    record.write()
    return record, resume


def _shown(value: Any) -> str:
    """A sampled value as short as it reads (a float to 4 significant digits)."""
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def before_training(cfg: ExperimentConfig, record: RunRecord, model: BaseAlgorithm, stopper: StopOnSignal) -> None:
    """A new run's random baseline (what the agent must beat; a stop signal abandons it) and step budget."""
    if cfg.random_baseline.episodes:
        with closed_at_end(one_env(cfg.env, for_eval=True)) as env:
            stop = lambda: stopper.signum is not None  # noqa: E731
            record.random_baseline = random_baseline(env, cfg.seed, cfg.random_baseline.episodes, stop)
    start = int(model.num_timesteps) if cfg.trained_agent is not None else 0  # (learn() counts a new agent from 0)
    rollout = rollout_steps(model)
    record.set_budget(start, true_steps(start, cfg.n_timesteps, rollout and rollout[0]))
    note = budget_note(model, cfg.n_timesteps, record.budget - start)
    if note is not None:
        line, warn = note
        if warn:
            record.warnings.append(line)
        log.log(logging.WARNING if warn else logging.INFO, line)
    if cfg.trained_agent is not None:
        steps = f"from its step {start:,}: {record.budget - start:,} steps more, to step {record.budget:,}"
        log.info("continuing the agent of %s %s", cfg.trained_agent, steps)
    note = schedule_note(cfg.callbacks.eval, record.budget - start)
    if note is not None:
        log.info(note)
    record.write()  # a run killed from here on can be resumed


def _new_record(
    cfg: ExperimentConfig, choices: dict[str, Any], run_dir: Path, command: list[str], threads: int, warnings: list[str]
) -> RunRecord:
    """The record of a run that starts now (status running)."""
    return RunRecord.start(
        choices,
        run_dir,
        env_id=cfg.env.id,
        tuned_file=cfg.tuned_file,
        tuned_env_id=cfg.tuned_env_id,
        seed=cfg.seed,
        n_timesteps=cfg.n_timesteps,
        trained_agent=cfg.trained_agent,
        command=command,
        threads=threads,
        warnings=warnings,
        algo_class=algo_target(cfg.algo, cfg.backend),
        sbx=is_sbx(cfg.backend),
    )
