"""The statistics a report gives of a group's runs (IQM, mean, median, std, optimality gap), each declared
once: its name and label, its value from the runs of every task (pooled), its value from counts over one
task's sorted runs (how the bootstrap resamples a single task), and the scores a report gives it of. The
bootstrap, report.json's keys, the tables' columns and the figures' panels are all read from STATISTICS.
So is the one statistic of a pair of groups, PROBABILITY_OF_IMPROVEMENT (P(A > B)), read from its own
declaration (a Comparison) by the bootstrap, report.json's comparison rows, report.md and comparisons.csv.

The definitions are rliable's (``rliable.metrics.aggregate_*``, Agarwal et al., NeurIPS 2021), but rliable
takes a runs x tasks matrix one repetition at a time: these take tasks of different sizes and every
repetition at once (tests/stats/test_report_stats.py checks them against rliable)."""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

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


def iqm(scores: np.ndarray, axis: int = -1) -> np.ndarray:
    """Interquartile mean: the mean of the middle 50% (rliable's definition), robust to a few outliers
    and more efficient than the median."""
    scores = np.asarray(scores)
    n = scores.shape[axis]
    low, high = int(0.25 * n), n - int(0.25 * n)
    middle = np.partition(scores, (low, high - 1), axis=axis)  # as scipy.stats.trim_mean, to the last bit
    return np.take(middle, np.arange(low, high), axis=axis).mean(axis=axis)


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
    weight = np.minimum(cum, high)
    start = np.subtract(cum, c)  # (in place from here: two arrays of reps x runs, not four)
    np.maximum(start, low, out=start)
    weight -= start
    np.maximum(weight, 0, out=weight)
    return (weight @ v) / (high - low)


def iqm_of_counts(v: np.ndarray, c: np.ndarray, cum: np.ndarray) -> np.ndarray:
    """``iqm_of_runs`` of each resample of one task (see OfCounts)."""
    low = int(0.25 * v.size)  # (as iqm and scipy.stats.trim_mean)
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


# one task: A's runs (..., n) and B's (..., m) -> (...)
OfRuns = Callable[[np.ndarray, np.ndarray], np.ndarray]
# one task: A's runs (n,) and B's sorted runs (m,) -> the function from how often each run of A is drawn in
# each repetition (reps, n) and the cumulative sums of B's counts after a 0 (reps, m + 1) to the comparison
# of each repetition (reps,); bound to the runs once, so that what they alone decide is computed once
ComparisonOfCounts = Callable[[np.ndarray, np.ndarray], Callable[[np.ndarray, np.ndarray], np.ndarray]]


@dataclass(frozen=True)
class Comparison:
    """A statistic of group A's runs against group B's, in a report's comparison rows.

    name: its key in report.json's comparison rows, and its columns in comparisons.csv (``columns``).
    label: its column heading.
    of_runs: its value on one task (the point estimate; averaged over tasks for several).
    of_counts: its value on one task of each resample, from counts over the sorted runs (see
        ComparisonOfCounts): the bootstrap's form, which must give what ``of_runs`` gives of the resamples.
    """

    name: str
    label: str
    of_runs: OfRuns
    of_counts: ComparisonOfCounts

    def columns(self) -> tuple[str, str, str]:
        """Its columns in comparisons.csv: the value, then its interval's ends."""
        return self.name, f"{self.name}_low", f"{self.name}_high"


def improvement(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """P(X > Y) + P(X = Y) / 2 over all pairs of the last axes: (..., n), (..., m) -> (...) (rliable's
    probability_of_improvement on one task: the Mann-Whitney U statistic over n x m)."""
    if x.ndim == 1 and y.ndim == 1:  # by sorting: n + m in memory, not n x m (groups of thousands of runs)
        y = np.sort(y)
        return np.asarray(_above(x, y).sum() / (2.0 * x.size * y.size))
    return (np.sign(x[..., :, None] - y[..., None, :]).mean(axis=(-2, -1)) + 1) / 2  # +1 above, 0 tie, -1 below


def _above(x: np.ndarray, y_sorted: np.ndarray) -> np.ndarray:
    """For each x: twice the number of y below it, plus the number equal (indices into y's cumulative counts)."""
    return np.stack([np.searchsorted(y_sorted, x, "left"), np.searchsorted(y_sorted, x, "right")])


def _improvement_of_counts(x: np.ndarray, y: np.ndarray) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """``improvement`` of each repetition (see ComparisonOfCounts): each x's draws times the y draws below
    it (ties half), O(runs) a repetition instead of O(n x m)."""
    above, n, m = _above(x, y), x.size, y.size

    def of_counts(cx: np.ndarray, cum_y: np.ndarray) -> np.ndarray:
        below_twice = np.take(cum_y, above[0], axis=1)  # (each at most 2m)
        below_twice += np.take(cum_y, above[1], axis=1)
        return np.einsum("ij,ij->i", cx, below_twice, dtype=np.float64) / (2.0 * n * m)

    return of_counts


PROBABILITY_OF_IMPROVEMENT = Comparison("probability_of_improvement", "P(A > B)", improvement, _improvement_of_counts)
