"""Wires one run together: record -> envs -> agent -> logger -> callbacks -> learn -> save -> evaluate.

Each step is a builder (rlexp.builders), a watcher (rlexp.monitor) or a part of the run dir (rlexp.rundir);
this module only calls them in the order a run needs them, and says in the run's record what each gave.
What the run dir holds is rlexp.rundir.contract's; what the command prints, rlexp.commands.train's.
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.vec_env import VecEnv

from rlexp.builders.backends import is_sbx, jax_device
from rlexp.builders.callbacks import RunCallbacks, build_callbacks
from rlexp.builders.envs import build_eval_env, closed_at_end, run_envs, spec_threshold
from rlexp.builders.logger import run_logger
from rlexp.builders.model import build_model
from rlexp.builders.torch_settings import foreach_optimizers, unchecked_distributions
from rlexp.config.overrides import as_override
from rlexp.config.plain import plain_dict
from rlexp.config.schema import ExperimentConfig
from rlexp.errors import Diverged
from rlexp.figures.curves import BackgroundCurves
from rlexp.lifecycle import lock
from rlexp.lifecycle.preemption import StopEvaluation, StopOnSignal, StopTraining
from rlexp.lifecycle.resume import ResumePoint
from rlexp.lifecycle.state import completed_run, config_difference
from rlexp.loading.run_agent import load_model, normalization_for_run
from rlexp.monitor.evaluation import final_evaluation
from rlexp.monitor.health import judge_final
from rlexp.monitor.solved import stop_threshold
from rlexp.references.verdict import run_standing
from rlexp.run.failure import diverged, record_failure
from rlexp.run.library_warnings import recorded_warnings
from rlexp.run.restore import restore_evaluation_state
from rlexp.run.start import before_training, start_run
from rlexp.rundir.agents import save_agent
from rlexp.rundir.contract import FINAL_EPISODES, LOGS_DIR, MONITOR_DIR, RESUME_DIR
from rlexp.rundir.record import ABSENT, RunRecord
from rlexp.search.pruning import ReportToTrial, pruned
from rlexp.trackers import Tracker, finish_trackers, start_trackers
from rlexp.trackers.writer import GuardedWriter

log = logging.getLogger(__name__)
# told when a run ends complete: its record, its dir as given, and whether it was complete already
RunEnd = Callable[[RunRecord, Path, bool], None]


def run(
    cfg: ExperimentConfig,
    run_dir: Path,
    choices: dict[str, Any],
    command: list[str],
    warnings: list[str] | None = None,
    reporter: ReportToTrial | None = None,
    keep_completed: bool = False,
    rerun: list[str] | None = None,
    on_end: RunEnd | None = None,
) -> RunRecord:
    """Train, save and evaluate one agent (its config passed the front door); returns its record.

    ``choices``: Hydra's group choices; ``warnings``: the front door's (kept in summary.json); ``reporter``:
    a search trial's; ``keep_completed``: keep a completed run of this config (a multirun run again);
    ``rerun``: the command that runs it again in its dir (default: ``command`` with the run dir)."""
    with lock.held(run_dir):  # taken by the front door for a single run; for a multirun job here
        done = completed_run(run_dir)
        if keep_completed and done is not None and not config_difference(plain_dict(cfg), run_dir):
            if on_end is not None:
                on_end(done, run_dir, True)
            return done
        rerun = rerun or [*command, as_override("hydra.run.dir", str(run_dir))]
        trial = (reporter.trial.number, reporter.trial.params) if reporter is not None else None
        record, resume = start_run(cfg, run_dir, choices, command, rerun, warnings or [], trial)
        stopper = StopOnSignal(run_dir)
        stopper.install()
        curves = BackgroundCurves(run_dir, record.title) if cfg.curves else None
        trackers: list[Tracker] = []
        try:
            with recorded_warnings(record):
                trackers = start_trackers(cfg.logger, run_dir, record, plain_dict(cfg))
                # (without diagnostics.finite, torch's own argument checks are the only NaN check left)
                with unchecked_distributions() if cfg.diagnostics.finite else nullcontext():
                    _train_and_evaluate(cfg, run_dir, record, reporter, resume, stopper, curves, trackers)
        except BaseException as err:
            record_failure(err, record, run_dir, stopper, trackers, curves, rerun)
            raise
        try:  # a stop signal from here on finds the run completed
            record.complete()
            record.write()
        finally:
            stopper.restore()
            if curves is not None:  # (drawn by now, or cancelled: no child outlives the run)
                curves.finish()
        shutil.rmtree(run_dir / RESUME_DIR, ignore_errors=True)  # the final agent supersedes it
        finish_trackers(trackers, run_dir, record)
        if on_end is not None:
            on_end(record, run_dir, False)
        late = stopper.after_completion(run_dir, record.final_mean)
        if late is not None:  # came as the run completed: a sweep in this process stops before its next job
            late.command = rerun
            raise late
        return record


def _train_and_evaluate(
    cfg: ExperimentConfig,
    run_dir: Path,
    record: RunRecord,
    reporter: ReportToTrial | None,
    resume: ResumePoint | None,
    stopper: StopOnSignal,
    curves: BackgroundCurves | None,
    trackers: list[Tracker],
) -> None:
    """Builds, trains, saves and scores the agent, filling ``record`` as it goes (``resume``: the saved agent
    of this run's earlier part, to continue from; ``curves``: drawn once training has ended)."""
    continued = resume is not None  # monitor files and logs grow instead of starting over
    stats = normalization_for_run(cfg.trained_agent, cfg.env.normalize, resume.path if resume else None)
    envs = run_envs(
        cfg.env, run_dir / MONITOR_DIR, stats, continued, seed=cfg.seed, eval_cfg=cfg.callbacks.eval,
        check_finite=cfg.diagnostics.finite, n_timesteps=cfg.n_timesteps,
    )  # fmt: skip
    with envs as (train_env, eval_env):
        model = _agent(cfg, train_env, resume.path if resume else None)
        record.device = jax_device() if is_sbx(cfg.backend) else str(model.device)
        writers = [GuardedWriter(t.writer(), t.name) for t in trackers]  # a tracker that fails is a warning
        logs = run_dir / LOGS_DIR
        model.set_logger(run_logger(cfg.logger.formats, cfg.logger.verbose, logs, writers, resume and resume.step))
        if resume is None:
            before_training(cfg, record, model, stopper)
        threshold = stop_threshold(cfg.callbacks, cfg.env, lambda: spec_threshold(cfg.env.id))
        record.stop_reward_threshold = ABSENT if threshold is None or eval_env is None else threshold
        fresh = resume is None and cfg.trained_agent is None
        callbacks = build_callbacks(
            cfg.callbacks,
            run_dir,
            eval_env,
            stopper,
            record.budget,
            record.diagnostics,
            fresh,
            reporter,
            threshold,
            origin=record.start_step if isinstance(record.start_step, int) else 0,
            diagnostics_cfg=cfg.diagnostics,
            n_envs=cfg.env.n_envs,
            verbose=cfg.logger.verbose,
        )
        if resume is not None and callbacks.save_best is not None:
            step = int(model.num_timesteps)
            restore_evaluation_state(cfg, run_dir, record, resume, step, callbacks.save_best, reporter)
        _learn(cfg, run_dir, model, callbacks, record, stopper, reporter)
        if curves is not None:  # (the figure reads the steps done from summary.json)
            record.write()
            curves.draw()
        save_agent(model, run_dir, replay_buffer=cfg.callbacks.checkpoint.save_replay_buffer)
        record.best_eval = callbacks.best()
        final = _final_evaluation(cfg, run_dir, model, train_env, continued, stopper)
        record.final_eval = final
        judge_final(record.diagnostics, cfg.diagnostics, model.ep_info_buffer, final, record.random_baseline)
        record.reference, record.zoo_published = run_standing(
            plain_dict(cfg, enum_to_str=True),
            algo=record.algo,
            tuned_file=cfg.tuned_file,
            env_id=cfg.env.id,
            final=final["mean"],
            steps=int(model.num_timesteps),
        )


def _agent(cfg: ExperimentConfig, env: VecEnv, resume: Path | None) -> BaseAlgorithm:
    """The agent the run trains: the one it saved before stopping (``resume``), the trained agent it continues
    (``trained_agent``), or a new one."""
    if cfg.trained_agent is None and resume is None:
        return build_model(
            env, cfg.algo, backend=cfg.backend, torch_threads=cfg.torch_threads, device=cfg.device, seed=cfg.seed,
            lr_schedule=cfg.lr_schedule, clip_range_schedule=cfg.clip_range_schedule, action_noise=cfg.action_noise,
            verbose=cfg.logger.verbose, env_cfg=cfg.env,
        )  # fmt: skip
    model = load_model(
        str(resume) if resume is not None else str(cfg.trained_agent), env, restricted=resume is None,
        algo=cfg.algo, backend=cfg.backend, torch_threads=cfg.torch_threads, device=cfg.device, seed=cfg.seed,
        lr_schedule=cfg.lr_schedule, clip_range_schedule=cfg.clip_range_schedule,
    )  # fmt: skip
    if resume is not None:  # new episodes and exploration noise, not a replay of the run's first ones
        model.set_random_seed(cfg.seed + int(model.num_timesteps))
    return model


def _final_evaluation(
    cfg: ExperimentConfig,
    run_dir: Path,
    model: BaseAlgorithm,
    train_env: VecEnv,
    continued: bool,
    stopper: StopOnSignal,
) -> dict[str, Any]:
    """The trained agent scored on fresh episodes; a stop signal abandons it (the trained agent resumes to it)."""
    try:
        stopper.check_evaluation()
        episodes, deterministic = cfg.callbacks.eval.final_episodes, cfg.callbacks.eval.deterministic
        with closed_at_end(
            build_eval_env(
                cfg.env,
                episodes,
                run_dir / MONITOR_DIR / FINAL_EPISODES,
                continued,
                seed=cfg.seed,
                eval_cfg=cfg.callbacks.eval,
                check_finite=cfg.diagnostics.finite,
            )
        ) as env:
            return final_evaluation(model, train_env, env, episodes, deterministic, stopper.check_evaluation)
    except StopEvaluation:
        stopper.save(int(model.num_timesteps))
        raise stopper.interrupted() from None  # type: ignore[misc]  # (saved just above: never None)


def _learn(
    cfg: ExperimentConfig,
    run_dir: Path,
    model: BaseAlgorithm,
    callbacks: RunCallbacks,
    record: RunRecord,
    stopper: StopOnSignal,
    reporter: ReportToTrial | None,
) -> None:
    """learn() up to the record's target steps, then what it did: stopped on a signal, pruned, or trained."""
    start_step = int(model.num_timesteps)
    left = record.steps_left(start_step, cfg.n_timesteps)  # (learn() rounds up to whole rollouts)
    foreach_optimizers(model)  # (a loaded agent's optimizers come with the groups it was saved with)
    started = time.perf_counter()
    try:
        fresh = record.resumed is ABSENT and cfg.trained_agent is None  # (learn() counts from 0)
        model.learn(left, callback=callbacks.all, reset_num_timesteps=fresh, progress_bar=cfg.callbacks.progress_bar)
    except StopTraining:  # the resume checkpoint is saved (the stopper says where)
        pass
    except Diverged as err:  # nothing saved after it: the checkpoints and best/ are of a sane agent
        raise diverged(run_dir, int(model.num_timesteps), err) from None
    finally:
        record.steps_done = int(model.num_timesteps)
        if callbacks.progress is not None:
            callbacks.progress.close()
    if (interrupted := stopper.interrupted()) is not None:
        record.steps_done, record.best_eval = interrupted.step, callbacks.best()
        raise interrupted
    if (stop := pruned(reporter)) is not None:
        raise stop
    solved = callbacks.solved
    record.trained(start_step, int(model.num_timesteps), time.perf_counter() - started, solved and solved.stopped_at)
