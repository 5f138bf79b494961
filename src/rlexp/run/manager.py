"""Wires one run together: envs -> model -> callbacks -> learn -> save -> evaluate -> summary.

Each step lives in its own module; this one only decides the order. The run dir it writes:

    run_dir/
      model.zip, vecnormalize.pkl, replay_buffer.pkl   final agent (statistics/buffer when used/asked)
      best/model.zip, best/vecnormalize.pkl, best.json best agent of the periodic evaluations
      checkpoints/step_<N>/                            complete agents every callbacks.checkpoint.freq
      evaluations.npz                                  periodic evaluations (RL Zoo's format)
      monitor/train/*.monitor.csv, monitor/eval/,      episode logs (training, periodic and final evaluations)
        monitor/final/
      logs/                                            progress.csv and TensorBoard events
      config.yaml, command.txt, .hydra/                the composed config as used, the command line
      summary.json                                     versions, seed, device, times, steps, scores (and the
                                                       random-policy baseline), warnings
      resume/                                          the agent of a run stopped by a signal (rlexp.run.preemption)
"""

from __future__ import annotations

import logging
import shlex
import shutil
import time
from contextlib import ExitStack, nullcontext
from pathlib import Path
from typing import Any

import optuna
import torch
from omegaconf import DictConfig, OmegaConf
from stable_baselines3.common.logger import configure

from rlexp.cluster.launchers import job_threads
from rlexp.errors import Diverged, Interrupted
from rlexp.overrides import as_override
from rlexp.plots.curves import BackgroundCurves
from rlexp.run import lock
from rlexp.run.backends import is_sbx, jax_device
from rlexp.run.baseline import random_baseline
from rlexp.run.callbacks import ReportToTrial, StopWhenSolved, build_callbacks, eval_freq, stop_threshold
from rlexp.run.diagnostics import no_better_than_random
from rlexp.run.envs import build_vec_env, closed_at_end
from rlexp.run.evaluation import build_eval_env, final_evaluation
from rlexp.run.health import TrainingHealth, train_eval_gap
from rlexp.run.lean import foreach_optimizers, unchecked_distributions
from rlexp.run.model import build_model, load_model, trained_agent_stats
from rlexp.run.preemption import (
    RESUMABLE,
    RESUME_DIR,
    ResumePoint,
    StopEvaluation,
    StopOnSignal,
    StopTraining,
    continued_logger,
    restore_evaluation_state,
)
from rlexp.run.progress import Progress
from rlexp.run.run_dir import completed_run, config_difference, resumable_run
from rlexp.run.saving import VECNORMALIZE_FILE, atomic_write_json, atomic_write_text, save_agent
from rlexp.run.summary import new_summary, now, provenance, tuned_note
from rlexp.trackers import Tracker, finish_trackers, start_trackers
from rlexp.trackers.writer import GuardedWriter

log = logging.getLogger(__name__)


def _failure_status(err: BaseException) -> str:
    if isinstance(err, optuna.TrialPruned):
        return "pruned"
    if isinstance(err, Interrupted):
        return RESUMABLE
    return "aborted" if isinstance(err, KeyboardInterrupt) else "failed"


def _title(summary: dict[str, Any]) -> str:
    return f"{summary['algo']} on {summary['env_id']}, seed {summary['seed']}"


def run(
    cfg: DictConfig,
    run_dir: Path,
    choices: dict[str, Any],
    command: list[str],
    warnings: list[str] | None = None,
    reporter: ReportToTrial | None = None,
    keep_completed: bool = False,
    rerun: list[str] | None = None,
) -> float:
    """Train, save and evaluate one agent (its config passed the front door); returns the final mean reward.

    ``choices`` are Hydra's config-group choices, ``command`` the job's command line, ``warnings`` what
    the front door warned about (recorded in summary.json); ``reporter`` reports the periodic evaluations
    to a search's trial. ``keep_completed``: a run dir that already holds this run, completed, is kept and
    its score returned (a multirun run again). ``rerun``: the command that runs it again in its dir
    exactly (command.txt and the resume hint; default: ``command`` with the run dir).
    """
    with lock.held(run_dir):  # taken by the front door for a single run; for a multirun job here
        done = completed_run(run_dir)
        if keep_completed and done is not None and not config_difference(cfg, run_dir):
            print(f"rlexp: {run_dir} already holds this run, completed (final eval {done['final_eval']['mean']:.2f})")
            return float(done["final_eval"]["mean"])
        log.info(tuned_note(cfg, choices))
        for warning in warnings or []:
            log.warning(warning)
        previous = resumable_run(cfg, run_dir)
        resume = previous[1] if previous else None
        rerun = rerun or [*command, as_override("hydra.run.dir", str(run_dir))]
        threads = job_threads(cfg.torch_threads)
        torch.set_num_threads(threads)
        if previous is None:
            atomic_write_text(run_dir / "config.yaml", OmegaConf.to_yaml(cfg, resolve=True))
            atomic_write_text(run_dir / "command.txt", shlex.join(rerun) + "\n")
            summary = new_summary(cfg, choices, run_dir, command, threads, warnings or [])
        else:
            summary = previous[0]
            summary.pop("error", None)
            summary.setdefault("resumed", []).append({"step": resume.step, "time": now()})
            summary.update(status="running", torch_threads=threads, **provenance(cfg))
            log.info("resuming the run in %s from step %d (%s)", run_dir, resume.step, resume.path.name)
        atomic_write_json(run_dir / "summary.json", summary)
        stopper = StopOnSignal(run_dir)
        stopper.install()
        curves = BackgroundCurves(run_dir, _title(summary)) if cfg.curves else None
        trackers: list[Tracker] = []
        try:
            trackers = start_trackers(cfg, run_dir, summary)  # (their ids go in summary.json, for a resume)
            # (without diagnostics.finite, torch's own argument checks are the only NaN check left)
            with unchecked_distributions() if cfg.diagnostics.finite else nullcontext():
                _train_and_evaluate(cfg, run_dir, summary, reporter, resume, stopper, curves, trackers)
        except BaseException as err:
            if isinstance(err, OSError) and err.filename is None:  # e.g. ENOSPC from inside a writer
                err.filename = str(run_dir)
            summary.update(status=_failure_status(err), error=f"{type(err).__name__}: {err}", end_time=now())
            try:
                atomic_write_json(run_dir / "summary.json", summary)
            except OSError as write_err:  # e.g. the disk that failed the run is still full: its error matters
                log.error("could not record status %s in %s: %s", summary["status"], run_dir, write_err)
            finally:  # a second signal before the status is written must not cut the write
                stopper.restore()
            try:
                if isinstance(err, Interrupted):
                    err.checkpoint, err.command = run_dir / RESUME_DIR, rerun
                    err.forward()  # e.g. submitit's handler: requeues the SLURM job (first: its grace is short)
            finally:
                finish_trackers(trackers, run_dir, summary)
                if curves is not None and summary["status"] == "failed":  # how it went until it failed
                    curves.draw()
                    curves.finish()
                elif curves is not None:
                    curves.cancel()
            raise
        try:  # a stop signal from here on finds the run completed
            summary.update(status="completed", end_time=now())
            atomic_write_json(run_dir / "summary.json", summary)
        finally:
            stopper.restore()
            if curves is not None:  # (drawn by now, or cancelled: no child outlives the run)
                curves.finish()
        shutil.rmtree(run_dir / RESUME_DIR, ignore_errors=True)  # the final agent supersedes it
        finish_trackers(trackers, run_dir, summary)
        final, best, baseline = summary["final_eval"], summary["best_eval"], summary.get("random_baseline")
        for found in summary.get("diagnostics", []):
            print(f"rlexp: warning: {found}")
        print(
            f"rlexp: run saved to {run_dir} | final eval {final['mean']:.2f} +/- {final['std']:.2f} "
            f"over {final['episodes']} episodes"
            + (f", best {best['mean']:.2f}" if best else "")
            + (f", random policy {baseline['mean']:.2f}" if baseline else "")
        )
        late = stopper.after_completion(run_dir, final["mean"])
        if late is not None:  # came as the run completed: a sweep in this process stops before its next job
            late.command = rerun
            raise late
        return final["mean"]


def _train_and_evaluate(
    cfg: DictConfig,
    run_dir: Path,
    summary: dict[str, Any],
    reporter: ReportToTrial | None,
    resume: ResumePoint | None,
    stopper: StopOnSignal,
    curves: BackgroundCurves | None,
    trackers: list[Tracker],
) -> None:
    """Builds, trains, saves and scores the agent, filling ``summary`` as it goes.

    ``resume``: the saved agent of this run's earlier part, to continue from; ``curves``: told to draw
    once training has ended, so that the figure is drawn beside the final evaluation; ``trackers``: get
    SB3's scalars as they are logged.
    """
    if resume is not None:
        stats = resume.path / VECNORMALIZE_FILE
        normalize_stats = stats if stats.is_file() else None
    else:
        normalize_stats = trained_agent_stats(cfg)
    continued = resume is not None  # monitor files and logs grow instead of starting over
    monitor = run_dir / "monitor"
    # closed whatever happens: that also stops SubprocVecEnv workers, which ignore the stop signals
    with ExitStack() as envs:
        train_env = envs.enter_context(
            closed_at_end(
                build_vec_env(
                    cfg.env,
                    cfg.seed,
                    monitor / "train",
                    normalize_stats,
                    append=continued,
                    check_finite=cfg.diagnostics.finite,
                )
            )
        )
        eval_env = None
        if eval_freq(cfg) > 0:  # the periodic evaluations' envs (the final one builds its own)
            eval_env = envs.enter_context(
                closed_at_end(build_eval_env(cfg, cfg.callbacks.eval.n_episodes, monitor / "eval", continued))
            )
        if resume is not None:
            model = load_model(cfg, str(resume.path), train_env)
            # new episodes and exploration noise, not a replay of the run's first ones
            model.set_random_seed(cfg.seed + int(model.num_timesteps))
        elif cfg.trained_agent is None:
            model = build_model(cfg, train_env)
        else:
            model = load_model(cfg, cfg.trained_agent, train_env)
        summary["device"] = jax_device() if is_sbx(cfg) else str(model.device)
        formats = list(cfg.logger.formats)
        if cfg.logger.verbose >= 2 and "stdout" not in formats:  # SB3's tables
            formats.insert(0, "stdout")
        if resume is not None:
            model.set_logger(continued_logger(run_dir / "logs", formats, resume.step))
        else:
            model.set_logger(configure(str(run_dir / "logs"), formats))
        # beside SB3's own formats; a tracker that fails to take them is a warning
        model.logger.output_formats += [GuardedWriter(t.writer(), t.name) for t in trackers]
        if resume is None:
            if cfg.random_baseline.episodes:  # what the agent must beat; a stop signal abandons it
                summary["random_baseline"] = random_baseline(
                    cfg.env, cfg.seed, cfg.random_baseline.episodes, stop=lambda: stopper.signum is not None
                )
            summary["start_step"] = int(model.num_timesteps)
            # learn() counts a continued agent's steps on from its own
            summary["target_steps"] = summary["start_step"] * (cfg.trained_agent is not None) + cfg.n_timesteps
            atomic_write_json(run_dir / "summary.json", summary)  # a run killed from here on can be resumed
        threshold = stop_threshold(cfg)
        solved = StopWhenSolved(threshold) if threshold is not None and eval_env is not None else None
        callbacks, save_best = build_callbacks(cfg, run_dir, eval_env, stopper, after_eval=reporter, solved=solved)
        progress = None
        if cfg.logger.verbose >= 1 and not cfg.callbacks.progress_bar:  # (SB3's own bar otherwise)
            progress = Progress(summary["target_steps"], save_best.parent if save_best else None)
            callbacks.callbacks.append(progress)
        found = summary.setdefault("diagnostics", [])  # kept on resume: each kind is said once per run
        fresh = resume is None and cfg.trained_agent is None
        callbacks.callbacks.append(TrainingHealth(cfg.diagnostics, summary["target_steps"], found, fresh))
        if resume is not None and save_best is not None:
            restore_evaluation_state(cfg, run_dir, summary, resume, int(model.num_timesteps), save_best, reporter)
        start_step = int(model.num_timesteps)
        # a run that had stopped when solved (then a signal cut its final evaluation) trains no more; one
        # resumed from an earlier checkpoint (a kill after the stop) trains on, to the stop again
        stopped = summary.get("stopped_early_at")
        if stopped is not None and stopped > start_step:
            summary.pop("stopped_early_at")
            stopped = None
        left = 0 if stopped is not None else max(summary["target_steps"] - start_step, 0)
        foreach_optimizers(model)  # (a loaded agent's optimizers come with the groups it was saved with)
        started = time.perf_counter()
        try:
            model.learn(
                total_timesteps=left,
                callback=callbacks,
                reset_num_timesteps=resume is None and cfg.trained_agent is None,
                progress_bar=cfg.callbacks.progress_bar,
            )
        except StopTraining:  # the resume checkpoint is saved (stopper.interrupted() says where)
            pass
        except Diverged as err:  # nothing saved after it: the checkpoints and best/ are of a sane agent
            newest = max((run_dir / "checkpoints").glob("step_*"), default=None)
            kept = f"; the newest checkpoint is {newest}" if newest else ""
            raise Diverged(f"training in {run_dir} diverged at step {model.num_timesteps}: {err}{kept}") from None
        finally:
            summary["steps_done"] = int(model.num_timesteps)
            if progress is not None:
                progress.close()
        interrupted = stopper.interrupted()
        if interrupted is not None:
            summary.update(steps_done=interrupted.step, best_eval=save_best.best if save_best else None)
            raise interrupted
        if reporter is not None and reporter.pruned_at is not None:
            raise optuna.TrialPruned(f"trial {reporter.trial.number} pruned at step {reporter.pruned_at}")
        train_seconds = time.perf_counter() - started
        if solved is not None:
            summary["stop_reward_threshold"] = threshold
            # (an evaluation at the budget's last step that reaches it stops nothing early)
            early = solved.stopped_at if (solved.stopped_at or 0) < summary["target_steps"] else None
            summary["stopped_early_at"] = early or summary.get("stopped_early_at")
        if curves is not None:  # (the figure reads the steps done from summary.json)
            summary["steps_done"] = int(model.num_timesteps)
            atomic_write_json(run_dir / "summary.json", summary)
            curves.draw()
        save_agent(model, run_dir, replay_buffer=cfg.callbacks.checkpoint.save_replay_buffer)
        summary.update(
            train_seconds=round(train_seconds, 2),
            steps_per_second=round((model.num_timesteps - start_step) / train_seconds, 1),
            steps_done=int(model.num_timesteps),
            best_eval=save_best.best if save_best else None,
        )
        try:  # a stop signal abandons it: the trained agent resumes to it
            stopper.check_evaluation()
            summary["final_eval"] = final_evaluation(
                model, train_env, cfg, monitor / "final", continued, stopper.check_evaluation
            )
        except StopEvaluation:
            stopper.save(int(model.num_timesteps))
            raise stopper.interrupted() from None
        baseline = summary.get("random_baseline") or {}
        train_eval_gap(
            found, cfg.diagnostics, model.ep_info_buffer, summary["final_eval"]["mean"], baseline.get("mean")
        )
    unlearnt = cfg.diagnostics.beat_random and no_better_than_random(
        summary["final_eval"], summary.get("random_baseline")
    )
    if unlearnt:  # (said under the run's last line; found only now, so not logged twice)
        found.append(unlearnt)
