"""One agent's episode returns summarised as an RL paper reports them: mean and IQM with 95% bootstrap
confidence intervals, not "mean +/- std of 10".

Every run summarises its random-policy baseline and draws its curves with these, so they are written
with numpy alone: importing scipy.stats costs a run about a second. They give scipy's numbers (``scipy.stats.trim_mean``
exactly; ``scipy.stats.bootstrap(..., method="percentile", vectorized=True)`` with the same generator to
the last bits of the interpolation; tests/stats/test_report_stats.py compares them)."""

from __future__ import annotations

from typing import Any

import numpy as np

from rlexp.stats.aggregates import IQM, MEAN, MEDIAN, STD, iqm

CONFIDENCE = 0.95
RESAMPLES = 10_000


def confidence_interval(
    scores: np.ndarray, statistic: Any, seed: int = 0, resamples: int = RESAMPLES
) -> list[float] | None:
    """Percentile bootstrap interval of ``statistic`` (None under 2 scores). The percentile method, as in
    rliable: BCa is undefined when every score is equal, a common case (CartPole's 500s)."""
    if scores.size < 2:
        return None
    rng = np.random.default_rng(seed)
    resampled = statistic(scores[rng.integers(0, scores.size, (resamples, scores.size))], axis=-1)
    alpha = (1 - CONFIDENCE) / 2
    low, high = np.quantile(resampled, [alpha, 1 - alpha])
    return [float(low), float(high)]


def summarize(returns: list[float] | np.ndarray, successes: list[bool] | None = None, seed: int = 0) -> dict[str, Any]:
    """Mean, std, median, IQM, min, max, 95% CIs of the mean and the IQM, and the success rate (with its
    CI) when the env reports ``is_success``. ``seed``: the bootstrap's, so that a summary is reproducible."""
    x = np.asarray(returns, dtype=np.float64)
    out: dict[str, Any] = {
        "episodes": int(x.size),
        MEAN.name: float(MEAN.pooled([x])),
        STD.name: float(x.std()),  # (of episodes, SB3's evaluate_policy's: ddof 0; STD of a report's seeds: 1)
        MEDIAN.name: float(MEDIAN.pooled([x])),
        IQM.name: float(IQM.pooled([x])),
        "min": float(x.min()),
        "max": float(x.max()),
        f"ci95_{MEAN.name}": confidence_interval(x, np.mean, seed),
        f"ci95_{IQM.name}": confidence_interval(x, iqm, seed),
    }
    if successes:
        s = np.asarray(successes, dtype=np.float64)
        out["success_rate"] = float(s.mean())
        out["ci95_success_rate"] = confidence_interval(s, np.mean, seed)
    return out
