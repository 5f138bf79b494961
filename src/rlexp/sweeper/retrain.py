"""Robust selection after a search: the best trials trained again on fresh seeds, and the one with the best
mean over them chosen, so that a single lucky seed does not win (retrain.yaml; the runs in retrain/)."""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Any

import numpy as np
import optuna
import yaml
from optuna.trial import FrozenTrial, TrialState

from rlexp.files.atomic import atomic_write_text
from rlexp.sweeper.launching import Jobs
from rlexp.sweeper.settings import SweepSettings
from rlexp.sweeper.trial_runs import run_overrides

log = logging.getLogger(__name__)


def _value(trial: FrozenTrial) -> float:
    """A complete trial's objective (Optuna types it optional for the trials still running)."""
    assert trial.value is not None, f"trial {trial.number} is complete, so it has a value"
    return trial.value


def retrain_top_trials(
    study: optuna.Study, settings: SweepSettings, jobs: Jobs, fixed: list[str], n_timesteps: Any, sweep_dir: Path
) -> int | None:
    """Re-trains the best ``retrain_top_k`` trials on ``retrain_seeds`` fresh seeds (the same seeds for
    every candidate) and returns the number of the trial with the best mean."""
    complete = [t for t in study.trials if t.state == TrialState.COMPLETE]
    if not complete:
        return None
    reverse = settings.direction == "maximize"
    top = sorted(complete, key=_value, reverse=reverse)[: settings.retrain_top_k]
    seeds = [settings.seed + 1_000_000 + i for i in range(settings.retrain_seeds)]  # never a search trial's seed
    runs = [
        (trial, run_overrides(trial.params, fixed, n_timesteps, seed, f"retrain/trial_{trial.number:04d}_seed_{seed}"))
        for trial in top
        for seed in seeds
    ]
    values: dict[int, list[float]] = {t.number: [] for t in top}
    for start in range(0, len(runs), settings.n_jobs):
        chunk = runs[start : start + settings.n_jobs]
        for (trial, _), outcome in zip(chunk, jobs.run([overrides for _, overrides in chunk]), strict=True):
            value = outcome.value if outcome.completed else None
            values[trial.number].append(float("nan") if value is None else float(value))
    means = {n: float(np.mean(v)) for n, v in values.items()}
    finite = {n: m for n, m in means.items() if math.isfinite(m)}
    winner = (max if reverse else min)(finite, key=finite.__getitem__) if finite else None
    report = {
        "seeds": seeds,
        "winner": winner,
        "candidates": [
            {
                "trial": n,
                "search_value": study.trials[n].value,
                "values": values[n],
                "mean": means[n],
                "std": float(np.std(values[n])),
            }
            for n in values
        ],
    }
    atomic_write_text(sweep_dir / "retrain.yaml", yaml.safe_dump(report, sort_keys=False))
    log.info(
        "robust selection over %d seeds: trial %s wins with mean %s",
        len(seeds),
        winner,
        None if winner is None else means[winner],
    )
    return winner
