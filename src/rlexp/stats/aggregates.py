"""The statistics a report gives of a group's runs (IQM, mean, median, std, optimality gap), each declared
once: its name and label, its value from the runs of every task (pooled), its value from counts over one
task's sorted runs (how the bootstrap resamples a single task), and the scores a report gives it of. The
bootstrap, report.json's keys, the tables' columns and the figures' panels are all read from STATISTICS.

The definitions are rliable's (``rliable.metrics.aggregate_*``, Agarwal et al., NeurIPS 2021), but rliable
takes a runs x tasks matrix one repetition at a time: these take tasks of different sizes and every
repetition at once (tests/unit/test_report_stats.py checks them against rliable)."""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from rlexp.stats.scores import iqm

# each task's run scores, (..., runs of the task) per task -> (...)
Pooled = Callable[[Sequence[np.ndarray]], np.ndarray]
# one task: its sorted runs (n,), how often each is drawn in each repetition (reps, n) and the cumulative
# sums of those counts (reps, n) -> (reps,): the statistic of each resample, without sorting any
OfCounts = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]


class Scores(enum.Enum):
    """The scores a report gives a statistic of."""

    RAW = "one env's scores"
    NORMALIZED = "one env's normalized scores (with --target)"
    OVER_ENVS = "the normalized scores of every env together"


@dataclass(frozen=True)
class Statistic:
    """One statistic of a report.

    name: its key in report.json's rows (``normalized_<name>`` of normalized scores, unless it is given of
        those alone).
    label: its column heading and panel title.
    pooled: its value from the runs of every task.
    of_counts: its value on one task from counts over the sorted runs; None: the bootstrap computes
        ``pooled`` of the resamples the counts stand for (slower, the same resamples).
    on: the scores a report gives it of.
    """

    name: str
    label: str
    pooled: Pooled
    of_counts: OfCounts | None
    on: frozenset[Scores]

    def __post_init__(self) -> None:
        if not self.on:
            raise ValueError(f"statistic {self.name!r}: given of no scores")

    def key(self, scores: Scores) -> str:
        """Its key in a report's row of ``scores``."""
        if scores is Scores.RAW or Scores.RAW not in self.on:
            return self.name
        return f"normalized_{self.name}"

    def label_of(self, scores: Scores) -> str:
        """Its heading beside the statistics of an env's own scores (as ``key``: "normalized IQM")."""
        return self.label if self.key(scores) == self.name else f"normalized {self.label}"


def _pooled(tasks: Sequence[np.ndarray]) -> np.ndarray:
    return np.concatenate(tasks, axis=-1)


def iqm_of_runs(tasks: Sequence[np.ndarray]) -> np.ndarray:
    """IQM of all runs of all tasks together (rliable's aggregate_iqm)."""
    return iqm(_pooled(tasks))


def mean(tasks: Sequence[np.ndarray]) -> np.ndarray:
    """Mean over tasks of each task's mean over runs (rliable's aggregate_mean)."""
    return np.mean([x.mean(axis=-1) for x in tasks], axis=0)


def median(tasks: Sequence[np.ndarray]) -> np.ndarray:
    """One task: the median of its runs. Several: the median over tasks of each task's mean (rliable's
    aggregate_median, the classic "median normalized score" of a benchmark)."""
    if len(tasks) == 1:
        return np.median(tasks[0], axis=-1)
    return np.median([x.mean(axis=-1) for x in tasks], axis=0)


def std(tasks: Sequence[np.ndarray]) -> np.ndarray:
    """Sample standard deviation of the runs (n - 1): what a paper's "+/- std over seeds" means."""
    x = _pooled(tasks)
    return x.std(axis=-1, ddof=1) if x.shape[-1] > 1 else np.full(x.shape[:-1], np.nan)


def optimality_gap(tasks: Sequence[np.ndarray]) -> np.ndarray:
    """How far normalized scores fall short of 1 (the target), on average over all runs; a score above it
    counts as 1 (rliable's aggregate_optimality_gap)."""
    return np.maximum(1.0 - _pooled(tasks), 0.0).mean(axis=-1)


def _trimmed(v: np.ndarray, c: np.ndarray, cum: np.ndarray, low: int, high: int) -> np.ndarray:
    """Mean of the order statistics low..high-1 of each resample: each run weighs what of its draws'
    places (cum - c .. cum) falls in the window."""
    weight = np.minimum(cum, high) - np.maximum(cum - c, low)
    np.maximum(weight, 0, out=weight)
    return (weight @ v) / (high - low)


def iqm_of_counts(v: np.ndarray, c: np.ndarray, cum: np.ndarray) -> np.ndarray:
    """``iqm_of_runs`` of each resample of one task (see OfCounts)."""
    low = int(0.25 * v.size)  # (as scores.iqm and scipy.stats.trim_mean)
    return _trimmed(v, c, cum, low, v.size - low)


def _median_of_counts(v: np.ndarray, c: np.ndarray, cum: np.ndarray) -> np.ndarray:
    n = v.size
    return _trimmed(v, c, cum, (n - 1) // 2, n // 2 + 1)


def _mean_of_counts(v: np.ndarray, c: np.ndarray, cum: np.ndarray) -> np.ndarray:
    return (c @ v) / v.size


def _std_of_counts(v: np.ndarray, c: np.ndarray, cum: np.ndarray) -> np.ndarray:
    deviations = (v - ((c @ v) / v.size)[:, None]) ** 2
    return np.sqrt(np.einsum("ij,ij->i", c, deviations) / (v.size - 1))


def _optimality_gap_of_counts(v: np.ndarray, c: np.ndarray, cum: np.ndarray) -> np.ndarray:
    return (c @ np.maximum(1.0 - v, 0.0)) / v.size


_EVERY = frozenset(Scores)
IQM = Statistic("iqm", "IQM", iqm_of_runs, iqm_of_counts, _EVERY)
MEAN = Statistic("mean", "mean", mean, _mean_of_counts, frozenset({Scores.RAW, Scores.OVER_ENVS}))
MEDIAN = Statistic("median", "median", median, _median_of_counts, frozenset({Scores.RAW, Scores.OVER_ENVS}))
STD = Statistic("std", "std", std, _std_of_counts, frozenset({Scores.RAW}))
OPTIMALITY_GAP = Statistic(
    "optimality_gap",
    "optimality gap",
    optimality_gap,
    _optimality_gap_of_counts,
    frozenset({Scores.NORMALIZED, Scores.OVER_ENVS}),  # (short of a target of 1: of normalized scores only)
)
# in the order of a report's columns
STATISTICS: tuple[Statistic, ...] = (IQM, MEAN, MEDIAN, STD, OPTIMALITY_GAP)


def reported(scores: Scores) -> dict[str, Statistic]:
    """The statistics a report gives of ``scores``, by their keys, in the order of STATISTICS."""
    return {s.key(scores): s for s in STATISTICS if scores in s.on}
