"""Is the difference between two groups of runs more than seed luck, how large is it, and how many seeds
would show it: Welch's t-test and the Mann-Whitney U test (scipy), Holm's correction over every
comparison made, Hedges' g, and the seeds per group a Welch test needs for 80% power."""

from __future__ import annotations

import warnings

import numpy as np
from scipy import stats

ALPHA = 0.05
POWER = 0.8
MAX_SEEDS = 10_000  # more seeds than this: reported as beyond reach


def welch_p(x: np.ndarray, y: np.ndarray) -> float | None:
    """Two-sided p-value of Welch's t-test (unequal variances); None when it is undefined (fewer than two
    runs in a group, or every run of both groups scoring the same)."""
    if x.size < 2 or y.size < 2 or (np.ptp(x) == 0 and np.ptp(y) == 0):
        return None
    with warnings.catch_warnings():  # scipy's "precision loss" when one group is constant (CartPole's 500s)
        warnings.simplefilter("ignore", RuntimeWarning)
        p = stats.ttest_ind(x, y, equal_var=False).pvalue  # type: ignore[attr-defined]  # (scipy makes TtestResult's fields at run time)
    return float(p) if np.isfinite(p) else None


def mann_whitney_p(x: np.ndarray, y: np.ndarray) -> float | None:
    """Two-sided p-value of the Mann-Whitney U test: no assumption of normal scores, which RL's often are
    not. None under two runs in a group, where it can never be small (and would only enlarge Holm's family)."""
    if x.size < 2 or y.size < 2:
        return None
    return float(stats.mannwhitneyu(x, y, alternative="two-sided").pvalue)


def holm(pvalues: list[float | None]) -> list[float | None]:
    """Holm-Bonferroni adjusted p-values (None stays None and is not counted): controls the chance of any
    false "significant" over all comparisons, without Bonferroni's loss of power. (scipy has only the
    false-discovery-rate corrections.)"""
    given = [(p, i) for i, p in enumerate(pvalues) if p is not None]
    adjusted: list[float | None] = [None] * len(pvalues)
    running = 0.0
    for rank, (p, i) in enumerate(sorted(given)):
        running = max(running, min(1.0, (len(given) - rank) * p))  # step-down: never below an earlier one
        adjusted[i] = running
    return adjusted


def hedges_g(x: np.ndarray, y: np.ndarray) -> float | None:
    """Standardized mean difference (X - Y over the pooled std) with the small-sample correction that
    matters at 3-10 seeds; None when it is undefined (under two runs, or no spread at all)."""
    nx, ny = x.size, y.size
    if nx < 2 or ny < 2:
        return None
    pooled = np.sqrt(((nx - 1) * x.var(ddof=1) + (ny - 1) * y.var(ddof=1)) / (nx + ny - 2))
    if pooled == 0:
        return None
    return float((x.mean() - y.mean()) / pooled * (1 - 3 / (4 * (nx + ny) - 9)))


def seeds_for_power(x: np.ndarray, y: np.ndarray, power: float = POWER, alpha: float = ALPHA) -> int | None:
    """Seeds per group for which a two-sided Welch test at ``alpha`` (one comparison: no correction)
    detects the observed difference of means with probability ``power``, if the groups' stds are what was
    observed (noncentral t). None: no difference observed, or it would take more than MAX_SEEDS; 2 when
    neither group varies at all (any two seeds show the difference)."""
    if x.size < 2 or y.size < 2:
        return None
    delta = abs(x.mean() - y.mean())
    vx, vy = x.var(ddof=1), y.var(ddof=1)
    v = vx + vy
    if delta == 0:
        return None
    if v == 0:
        return 2  # no spread: two seeds each show it

    def achieved(n: int) -> float:
        df = (n - 1) * v**2 / (vx**2 + vy**2)  # Welch-Satterthwaite at equal n
        nc = delta / np.sqrt(v / n)
        critical = stats.t.ppf(1 - alpha / 2, df)
        return float(stats.nct.sf(critical, df, nc) + stats.nct.cdf(-critical, df, nc))

    high = 2  # power grows with n: double until enough, then bisect
    while achieved(high) < power:
        if high >= MAX_SEEDS:
            return None
        high = min(2 * high, MAX_SEEDS)
    low = max(2, high // 2)
    if achieved(low) >= power:
        return low
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if achieved(middle) >= power else (middle, high)
    return high
