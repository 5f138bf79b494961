"""Wires one run together: envs -> model -> callbacks -> learn -> save -> evaluate -> summary.

Each step lives in its own module; this one only decides the order and writes the run directory:

    run_dir/
      model.zip, vecnormalize.pkl, replay_buffer.pkl   final agent (statistics/buffer when used/asked)
      best/model.zip, best/vecnormalize.pkl            best agent of the periodic evaluations
      checkpoints/step_<N>/                            complete agents every callbacks.checkpoint.freq
      evaluations.npz                                  periodic evaluations (RL Zoo's format)
      monitor/train/*.monitor.csv, monitor/eval/       episode logs
      logs/                                            progress.csv and TensorBoard events
      config.yaml, command.txt, .hydra/                the composed config as used, the command line
      summary.json                                     versions, seed, times, steps, scores
      resume/                                          the agent of a run stopped by a signal (rlexp.run.preemption)
"""

from __future__ import annotations

import json
import logging
import shlex
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np
import optuna
import torch
import yaml
from omegaconf import DictConfig, OmegaConf
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.logger import configure
from stable_baselines3.common.vec_env import sync_envs_normalization

from rlexp.cluster.launchers import job_threads
from rlexp.errors import ConfigError, Interrupted
from rlexp.run.callbacks import BEST_DIR, BEST_FILE, ReportToTrial, SaveBestCallback, build_callbacks
from rlexp.run.envs import EVAL_SEED_OFFSET, build_vec_env, check_env, closed_at_end, resolve_spec
from rlexp.run.model import build_model, find_trained_agent, load_model
from rlexp.run.preemption import (
    RESUMABLE,
    RESUME_DIR,
    ResumePoint,
    StopOnSignal,
    abandoned,
    continued_logger,
    restore_evaluations,
    resume_point,
    set_aside,
)
from rlexp.run.saving import VECNORMALIZE_FILE, atomic_write_json, atomic_write_text, save_agent
from rlexp.run.summary import now, provenance
from rlexp.schema import reject_unknown_keys

log = logging.getLogger(__name__)


def _normalize_stats(cfg: DictConfig) -> Path | None:
    """The VecNormalize statistics of the agent to continue, checked against env.normalize."""
    if cfg.trained_agent is None:
        return None
    stats = find_trained_agent(cfg.trained_agent)[1] / VECNORMALIZE_FILE
    if stats.is_file() != bool(cfg.env.normalize):
        raise ConfigError(
            f"trained_agent={cfg.trained_agent} was trained with{'' if stats.is_file() else 'out'} "
            f"VecNormalize; set env.normalize={stats.is_file()}"
        )
    return stats if stats.is_file() else None


def validate(cfg: DictConfig) -> None:
    """Checks that the schemas cannot express, before anything is built or written."""
    reject_unknown_keys(cfg)
    resolve_spec(cfg.env.id)
    if cfg.n_timesteps <= 0:
        raise ConfigError(f"n_timesteps must be > 0, got {cfg.n_timesteps}")
    if cfg.torch_threads is not None and cfg.torch_threads < 1:
        raise ConfigError(f"torch_threads must be >= 1 (or null: the job's CPUs), got {cfg.torch_threads}")
    if cfg.callbacks.eval.n_evaluations is not None and not 0 < cfg.callbacks.eval.n_evaluations <= cfg.n_timesteps:
        raise ConfigError(
            f"callbacks.eval.n_evaluations must be in [1, n_timesteps], got {cfg.callbacks.eval.n_evaluations}"
        )
    if cfg.callbacks.eval.final_episodes < 1:
        raise ConfigError(f"callbacks.eval.final_episodes must be >= 1, got {cfg.callbacks.eval.final_episodes}")
    _normalize_stats(cfg)
    if cfg.tuned_file and cfg.tuned_env_id != cfg.env.id:
        log.warning(
            "tuned/%s.yaml was tuned for %s, not env.id=%s; add ~tuned to train with the algorithm's defaults",
            cfg.tuned_file,
            cfg.tuned_env_id,
            cfg.env.id,
        )


def _failure_status(err: BaseException) -> str:
    if isinstance(err, optuna.TrialPruned):
        return "pruned"
    if isinstance(err, Interrupted):
        return RESUMABLE
    return "aborted" if isinstance(err, KeyboardInterrupt) else "failed"


def _first_difference(old: Any, new: Any, path: str = "") -> str:
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(old.keys() | new.keys(), key=str):
            where = f"{path}.{key}" if path else str(key)
            if key not in old or key not in new:
                return where
            found = _first_difference(old[key], new[key], where)
            if found:
                return found
        return ""
    return "" if old == new else path


def _resumable_run(cfg: DictConfig, run_dir: Path) -> tuple[dict[str, Any], ResumePoint] | None:
    """The summary of the run to continue in ``run_dir`` (stopped by a signal, or its process died;
    same config) and where to continue it from; None for a new run dir, or for an abandoned run that
    saved nothing (it starts over). Any other run there is refused, so that nothing overwrites it."""
    if not (run_dir / "summary.json").exists():
        return None
    summary = json.loads((run_dir / "summary.json").read_text())
    point = resume_point(run_dir, summary)
    if point is None and not abandoned(summary):
        status = summary.get("status")
        owner = (
            f", by {summary.get('host')} pid {summary.get('pid')}, which may still run" if status == "running" else ""
        )
        raise ConfigError(
            f"hydra.run.dir={run_dir} already holds a run (status {status}{owner}); choose a new "
            f"directory (to continue that agent: trained_agent={run_dir})"
        )
    differs = _config_difference(cfg, run_dir)
    if differs:
        raise ConfigError(
            f"hydra.run.dir={run_dir} holds an interrupted run with another config (differs at "
            f"{differs}); to resume it, re-run its command (command.txt)"
        )
    if point is None:
        log.warning(
            "the run in %s ended without a checkpoint; starting over (its files: %s)", run_dir, set_aside(run_dir)
        )
        return None
    return summary, point


def _config_difference(cfg: DictConfig, run_dir: Path) -> str:
    """The first key where ``cfg`` differs from the config of the run in ``run_dir`` ('' if none)."""
    old = yaml.safe_load((run_dir / "config.yaml").read_text())
    new = OmegaConf.to_container(cfg, resolve=True)
    return "" if old == new else _first_difference(old, new) or "?"


def run(
    cfg: DictConfig,
    run_dir: Path,
    choices: dict[str, Any],
    command: list[str],
    reporter: ReportToTrial | None = None,
    keep_completed: bool = False,
) -> float:
    """Train, save and evaluate one agent; returns the final mean evaluation reward.

    ``choices`` are Hydra's config-group choices, ``command`` the job's command line; ``reporter``
    reports the periodic evaluations to a search's trial. ``keep_completed``: a run dir that already
    holds this run, completed, is kept and its score returned (a multirun run again).
    """
    validate(cfg)
    done = _completed_run(run_dir)
    if keep_completed and done is not None and not _config_difference(cfg, run_dir):
        print(f"rlexp: {run_dir} already holds this run, completed (final eval {done['final_eval']['mean']:.2f})")
        return float(done["final_eval"]["mean"])
    previous = _resumable_run(cfg, run_dir)
    resume = previous[1] if previous else None
    threads = job_threads(cfg.torch_threads)
    torch.set_num_threads(threads)
    if previous is None:
        run_dir.mkdir(parents=True, exist_ok=True)
        atomic_write_text(run_dir / "config.yaml", OmegaConf.to_yaml(cfg, resolve=True))
        atomic_write_text(run_dir / "command.txt", shlex.join(command) + "\n")
        summary: dict[str, Any] = {
            "status": "running",
            "algo": choices.get("algo"),
            "algo_class": cfg.algo._target_,
            "env": choices.get("env"),
            "env_id": cfg.env.id,
            "tuned_file": cfg.tuned_file,
            "tuned_env_id": cfg.tuned_env_id,
            "seed": cfg.seed,
            "torch_threads": threads,
            "n_timesteps": cfg.n_timesteps,
            "trained_agent": cfg.trained_agent,
            "run_dir": str(run_dir.resolve()),
            "start_time": now(),
            "command": command,
            **provenance(),
        }
    else:
        summary = previous[0]
        summary.pop("error", None)
        summary.setdefault("resumed", []).append({"step": resume.step, "time": now()})
        summary.update(status="running", torch_threads=threads, **provenance())
        log.info("resuming the run in %s from step %d (%s)", run_dir, resume.step, resume.path.name)
    atomic_write_json(run_dir / "summary.json", summary)
    stopper = StopOnSignal(run_dir)
    stopper.install()
    try:
        _train_and_evaluate(cfg, run_dir, summary, reporter, resume, stopper)
    except BaseException as err:
        summary.update(
            status=_failure_status(err),
            error=f"{type(err).__name__}: {err}",
            end_time=now(),
        )
        atomic_write_json(run_dir / "summary.json", summary)
        if isinstance(err, Interrupted):
            err.checkpoint, err.command = run_dir / RESUME_DIR, command
            err.forward()  # e.g. submitit's handler: requeues the SLURM job, which then resumes here
        raise
    finally:
        stopper.restore()
    summary.update(status="completed", end_time=now())
    atomic_write_json(run_dir / "summary.json", summary)
    shutil.rmtree(run_dir / RESUME_DIR, ignore_errors=True)  # the final agent supersedes it
    final, best = summary["final_eval"], summary["best_eval"]
    print(
        f"rlexp: run saved to {run_dir} | final eval {final['mean']:.2f} +/- {final['std']:.2f} "
        f"over {final['episodes']} episodes" + (f", best {best['mean']:.2f}" if best else "")
    )
    return final["mean"]


def _train_and_evaluate(
    cfg: DictConfig,
    run_dir: Path,
    summary: dict[str, Any],
    reporter: ReportToTrial | None,
    resume: ResumePoint | None,
    stopper: StopOnSignal,
) -> None:
    """Builds, trains, saves and scores the agent, filling ``summary`` as it goes.

    ``resume``: the saved agent of this run's earlier part, to continue from.
    """
    if cfg.env.check and resume is None:
        check_env(cfg.env)
    if resume is not None:
        stats = resume.path / VECNORMALIZE_FILE
        normalize_stats = stats if stats.is_file() else None
    else:
        normalize_stats = _normalize_stats(cfg)
    continued = resume is not None  # monitor files and logs grow instead of starting over
    # closed whatever happens: that also stops SubprocVecEnv workers, which ignore the stop signals
    with (
        closed_at_end(
            build_vec_env(cfg.env, cfg.seed, run_dir / "monitor" / "train", normalize_stats, append=continued)
        ) as train_env,
        closed_at_end(
            build_vec_env(cfg.env, cfg.seed, run_dir / "monitor" / "eval", for_eval=True, append=continued)
        ) as eval_env,
    ):
        if resume is not None:
            model = load_model(cfg, str(resume.path), train_env)
            # new episodes and exploration noise, not a replay of the run's first ones
            model.set_random_seed(cfg.seed + int(model.num_timesteps))
        elif cfg.trained_agent is None:
            model = build_model(cfg, train_env)
        else:
            model = load_model(cfg, cfg.trained_agent, train_env)
        formats = list(cfg.logger.formats)
        if resume is not None:
            model.set_logger(continued_logger(run_dir / "logs", formats, resume.step))
        else:
            model.set_logger(configure(str(run_dir / "logs"), formats))
        callbacks, save_best = build_callbacks(cfg, run_dir, eval_env, after_eval=reporter)
        callbacks.callbacks.insert(0, stopper)

        if resume is None:
            summary["start_step"] = int(model.num_timesteps)
            # learn() counts a continued agent's steps on from its own
            summary["target_steps"] = summary["start_step"] * (cfg.trained_agent is not None) + cfg.n_timesteps
            atomic_write_json(run_dir / "summary.json", summary)  # a run killed from here on can be resumed
        elif save_best is not None:
            _restore_evaluation_state(cfg, run_dir, summary, resume, int(model.num_timesteps), save_best, reporter)
        start_step = int(model.num_timesteps)
        started = time.perf_counter()
        try:
            model.learn(
                total_timesteps=max(summary["target_steps"] - start_step, 0),
                callback=callbacks,
                reset_num_timesteps=resume is None and cfg.trained_agent is None,
                progress_bar=cfg.callbacks.progress_bar,
            )
        finally:
            summary["steps_done"] = int(model.num_timesteps)
        interrupted = stopper.interrupted()
        if interrupted is not None:
            summary.update(steps_done=interrupted.step, best_eval=save_best.best if save_best else None)
            raise interrupted
        if reporter is not None and reporter.pruned_at is not None:
            raise optuna.TrialPruned(f"trial {reporter.trial.number} pruned at step {reporter.pruned_at}")
        train_seconds = time.perf_counter() - started
        save_agent(model, run_dir, replay_buffer=cfg.callbacks.checkpoint.save_replay_buffer)

        # a fresh, seeded series of episodes, whatever the periodic evaluations consumed before
        eval_env.seed(cfg.seed + EVAL_SEED_OFFSET)
        sync_envs_normalization(train_env, eval_env)
        rewards, lengths = evaluate_policy(
            model,
            eval_env,
            n_eval_episodes=cfg.callbacks.eval.final_episodes,
            deterministic=cfg.callbacks.eval.deterministic,
            return_episode_rewards=True,
        )
        summary.update(
            train_seconds=round(train_seconds, 2),
            steps_per_second=round((model.num_timesteps - start_step) / train_seconds, 1),
            steps_done=int(model.num_timesteps),
            final_eval={
                "mean": float(np.mean(rewards)),
                "std": float(np.std(rewards)),
                "episodes": len(rewards),
                "mean_length": float(np.mean(lengths)),
            },
            best_eval=save_best.best if save_best else None,
        )


def _restore_evaluation_state(
    cfg: DictConfig,
    run_dir: Path,
    summary: dict[str, Any],
    resume: ResumePoint,
    step: int,
    save_best: SaveBestCallback,
    reporter: ReportToTrial | None,
) -> None:
    """A resumed run's evaluations go on as one series: same schedule, same best, same trial reports."""
    eval_cb = save_best.parent
    restore_evaluations(eval_cb, run_dir, (step - summary["start_step"]) // cfg.env.n_envs, upto_step=resume.step)
    # best/ holds it (its best.json is there even when the run died before updating summary.json)
    recorded = run_dir / BEST_DIR / BEST_FILE
    save_best.best = json.loads(recorded.read_text()) if recorded.is_file() else summary.get("best_eval")
    if save_best.best is not None:
        eval_cb.best_mean_reward = float(save_best.best["mean"])
    if reporter is not None:  # the trial's reports go on from the evaluations already reported
        reporter.values = [float(np.mean(r)) for r in eval_cb.evaluations_results]


def _completed_run(run_dir: Path) -> dict[str, Any] | None:
    summary = run_dir / "summary.json"
    if summary.is_file() and (done := json.loads(summary.read_text()))["status"] == "completed":
        return done
    return None


def run_trial(
    cfg: DictConfig, run_dir: Path, choices: dict[str, Any], command: list[str], trial: optuna.Trial, n_seeds: int
) -> float:
    """One trial of a search: ``n_seeds`` runs with seeds cfg.seed, cfg.seed + 1, ... one after another,
    each a normal run in ``run_dir/seed_<s>`` (in ``run_dir`` itself for one seed); the objective is
    the mean of their final evaluations. Pruning may stop the trial during any of them. A trial job
    started again (a requeued SLURM job) keeps the seeds it completed and resumes the one it stopped in."""
    if n_seeds == 1:
        return run(cfg, run_dir, choices, command, ReportToTrial(trial))
    seeds = list(range(cfg.seed, cfg.seed + n_seeds))
    finals: list[float] = []
    reporters: list[ReportToTrial] = []
    for seed in seeds:
        seed_cfg = cfg.copy()
        seed_cfg.seed = seed
        seed_dir = run_dir / f"seed_{seed}"
        per_seed = cfg.callbacks.eval.n_evaluations
        reporter = ReportToTrial(trial, earlier=[r.values for r in reporters], per_seed=per_seed)
        done = _completed_run(seed_dir)
        if done is not None and not _config_difference(seed_cfg, seed_dir):  # reported by an earlier attempt
            if (seed_dir / "evaluations.npz").is_file():
                with np.load(seed_dir / "evaluations.npz") as data:
                    reporter.values = [float(np.mean(r)) for r in data["results"]]
            finals.append(done["final_eval"]["mean"])
        else:
            seed_command = [arg for arg in command if not arg.startswith("seed=")] + [f"seed={seed}"]
            finals.append(run(seed_cfg, seed_dir, choices, seed_command, reporter))
        reporters.append(reporter)
    mean = float(np.mean(finals))
    atomic_write_json(run_dir / "trial.json", {"seeds": seeds, "finals": finals, "mean": mean})
    print(f"rlexp: trial {trial.number} mean final eval over {n_seeds} seeds: {mean:.2f}")
    return mean
