"""Stratified bootstrap confidence intervals over runs, as rliable computes them (Agarwal et al., NeurIPS
2021): runs are resampled with replacement within each task (env), the aggregate is computed over all
resampled scores, and the interval is the percentile interval of the aggregates.

Vectorised: every repetition at once in one array, so that rliable's default of 50,000 repetitions
costs milliseconds (rliable draws them one by one through arch: ~35 s for two algorithms here), and
tasks may hold different numbers of runs (rliable needs a runs x tasks matrix)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from rlexp.stats.scores import iqm

REPS = 50_000  # rliable's default
CONFIDENCE = 0.95
METHOD = "percentile"  # rliable's default; BCa is undefined when every score is equal (CartPole's 500s)
PAIRS_PER_CHUNK = 20_000_000  # comparisons held in memory at once by probability_of_improvement

# an aggregate takes each task's run scores, (..., runs of the task) per task, and returns (...)
Aggregate = Callable[[Sequence[np.ndarray]], np.ndarray]


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


AGGREGATES: dict[str, Aggregate] = {"iqm": iqm_of_runs, "mean": mean, "median": median, "std": std}


def resample(tasks: Sequence[np.ndarray], reps: int, rng: np.random.Generator) -> list[np.ndarray]:
    """(reps, runs of the task) per task: each task's runs drawn with replacement from its own runs."""
    return [x[rng.integers(0, x.size, size=(reps, x.size))] for x in tasks]


def _bounds(values: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    tail = 100 * (1 - confidence) / 2
    low, high = np.percentile(values, [tail, 100 - tail], axis=0)
    return low, high


def interval_estimates(
    tasks: Sequence[np.ndarray],
    aggregates: dict[str, Aggregate],
    reps: int = REPS,
    confidence: float = CONFIDENCE,
    seed: int = 0,
) -> dict[str, tuple[float, float | None, float | None]]:
    """Point estimate and stratified bootstrap interval of each aggregate of the scores of ``tasks`` (one
    array of run scores per task); the same resamples serve every aggregate. No interval from one run."""
    tasks = [np.asarray(x, dtype=np.float64) for x in tasks]
    draws = resample(tasks, reps, np.random.default_rng(seed)) if sum(x.size for x in tasks) > 1 else None
    out: dict[str, tuple[float, float | None, float | None]] = {}
    for name, aggregate in aggregates.items():
        point = float(aggregate(tasks))
        if draws is None:
            out[name] = (point, None, None)
            continue
        low, high = _bounds(aggregate(draws), confidence)
        out[name] = (point, float(low), float(high)) if np.isfinite(point) else (point, None, None)
    return out


def improvement(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """P(X > Y) + P(X = Y) / 2 over all pairs of the last axes: (..., n), (..., m) -> (...)."""
    return (np.sign(x[..., :, None] - y[..., None, :]).mean(axis=(-2, -1)) + 1) / 2  # +1 above, 0 tie, -1 below


def probability_of_improvement(
    x_tasks: Sequence[np.ndarray],
    y_tasks: Sequence[np.ndarray],
    reps: int = REPS,
    confidence: float = CONFIDENCE,
    seed: int = 0,
) -> tuple[float, float | None, float | None]:
    """P(a run of X scores above a run of Y on a task), averaged over tasks (the Mann-Whitney U statistic
    over n x m), with its interval: X's and Y's runs resampled independently, each within its task. No
    interval when a task has a single run of X or of Y."""
    point = float(np.mean([improvement(x, y) for x, y in zip(x_tasks, y_tasks, strict=True)]))
    if any(x.size < 2 or y.size < 2 for x, y in zip(x_tasks, y_tasks, strict=True)):
        return point, None, None  # a single run's own luck cannot be resampled: no interval, as elsewhere
    rng = np.random.default_rng(seed)
    total = np.zeros(reps)
    for x, y in zip(x_tasks, y_tasks, strict=True):
        xs = x[rng.integers(0, x.size, size=(reps, x.size))]
        ys = y[rng.integers(0, y.size, size=(reps, y.size))]
        chunk = max(1, PAIRS_PER_CHUNK // (x.size * y.size))
        for start in range(0, reps, chunk):
            total[start : start + chunk] += improvement(xs[start : start + chunk], ys[start : start + chunk])
    low, high = _bounds(total / len(x_tasks), confidence)
    return point, float(low), float(high)


def curve_band(
    runs: np.ndarray, reps: int, confidence: float = CONFIDENCE, seed: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """IQM over runs at each point of a curve (runs x points) with its bootstrap band (whole runs drawn,
    so a band point is the same resample as its neighbours)."""
    point = iqm(runs, axis=0)
    if runs.shape[0] < 2:
        return point, np.full_like(point, np.nan), np.full_like(point, np.nan)
    draws = runs[np.random.default_rng(seed).integers(0, runs.shape[0], size=(reps, runs.shape[0]))]
    low, high = _bounds(iqm(draws, axis=1), confidence)  # (reps, runs, points) -> (reps, points)
    return point, low, high


def performance_profile(
    tasks: Sequence[np.ndarray], taus: np.ndarray, reps: int, confidence: float = CONFIDENCE, seed: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Fraction of runs scoring above each tau, averaged over tasks, with its stratified bootstrap band."""

    def fraction(x: np.ndarray) -> np.ndarray:  # (..., runs) -> (..., taus)
        return (x[..., None, :] > taus[:, None]).mean(axis=-1)

    point = np.mean([fraction(x) for x in tasks], axis=0)
    rng = np.random.default_rng(seed)
    draws = np.mean([fraction(x[rng.integers(0, x.size, size=(reps, x.size))]) for x in tasks], axis=0)
    low, high = _bounds(draws, confidence)
    return point, low, high
