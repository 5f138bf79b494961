"""A resumed run's evaluations go on as one series: the same schedule, the same best agent, the same
reports to a search's trial."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from stable_baselines3.common.callbacks import EvalCallback

from rlexp.builders.callbacks import SaveBestCallback
from rlexp.config.schema import ExperimentConfig
from rlexp.lifecycle.resume import ResumePoint
from rlexp.rundir.contract import (
    BEST_DIR,
    BEST_FILE,
    Evaluations,
    best_record,
    read_best,
    read_evaluations_or_set_aside,
    write_best,
)
from rlexp.rundir.record import RunRecord
from rlexp.search.pruning import ReportToTrial


def restore_evaluations(eval_cb: EvalCallback, data: Evaluations | None, n_calls: int, upto_step: int) -> None:
    """Carries the earlier part's evaluations (up to the resume step) into the resumed EvalCallback:
    evaluations.npz keeps them and the schedule stays on the same steps."""
    if data is not None and data.ep_lengths.size == data.results.size:
        keep = [i for i, t in enumerate(data.timesteps) if t <= upto_step]
        eval_cb.evaluations_timesteps = [data.timesteps[i] for i in keep]
        eval_cb.evaluations_results = [list(data.results[i]) for i in keep]
        eval_cb.evaluations_length = [list(data.ep_lengths[i]) for i in keep]
        if data.successes is not None:
            eval_cb.evaluations_successes = [list(data.successes[i]) for i in keep]
    eval_cb.n_calls = n_calls  # env steps / n_envs since the run started: evaluations stay on their steps


def restore_evaluation_state(
    cfg: ExperimentConfig,
    run_dir: Path,
    record: RunRecord,
    resume: ResumePoint,
    step: int,
    save_best: SaveBestCallback,
    reporter: ReportToTrial | None,
) -> None:
    """A resumed run's evaluations go on as one series: same schedule, same best, same trial reports."""
    eval_cb = save_best.parent
    assert isinstance(eval_cb, EvalCallback) and isinstance(record.start_step, int)
    data = read_evaluations_or_set_aside(run_dir)
    restore_evaluations(eval_cb, data, (step - record.start_step) // cfg.env.n_envs, upto_step=resume.step)
    # best/ holds it (its best.json is there even when the run died before updating summary.json)
    recorded = (run_dir / BEST_DIR / BEST_FILE).is_file()
    earlier = record.best_eval if isinstance(record.best_eval, dict) else None
    save_best.best = read_best(run_dir) if recorded else None
    if save_best.best is None and recorded:  # unreadable: rebuilt and written again
        save_best.best = _best_of(data) or earlier
        if save_best.best is not None:
            write_best(run_dir / BEST_DIR, save_best.best)
    elif save_best.best is None:
        save_best.best = earlier
    if save_best.best is not None:
        eval_cb.best_mean_reward = float(save_best.best["mean"])
    if reporter is not None:  # the trial's reports go on from the evaluations already reported
        reporter.values = [float(np.mean(r)) for r in eval_cb.evaluations_results]


def _best_of(data: Evaluations | None) -> dict | None:
    """The evaluation that made best/ the best: the first of the highest means of all evaluations, also
    those a killed part made after the resume step (best/ may hold its agent)."""
    if data is None or len(data.results) == 0:
        return None
    i = int(np.argmax(data.means))
    return best_record(data.results[i], int(data.timesteps[i]))
