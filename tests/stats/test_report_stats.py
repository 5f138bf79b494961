"""rlexp's statistics against the libraries of record on the same scores: rliable (IQM, mean, median,
optimality gap and probability of improvement, with their stratified bootstrap intervals), scipy
(Welch's t-test, Mann-Whitney U, the percentile bootstrap) and statsmodels (Holm, t-test power)."""

from __future__ import annotations

import csv
import io
import itertools

import numpy as np
import pytest
from rliable import library, metrics  # (the test extra's: a missing one must fail here, not skip)
from scipy import stats
from statsmodels.stats import multitest, power

from rlexp.stats import bootstrap, significance
from rlexp.stats.aggregates import (
    IQM,
    MEAN,
    MEDIAN,
    OPTIMALITY_GAP,
    PROBABILITY_OF_IMPROVEMENT,
    STATISTICS,
    Scores,
    Statistic,
    reported,
)

pytestmark = pytest.mark.unit  # pure logic in-process, no training (pytest -m unit)

# rliable's intervals are drawn with fewer repetitions (it loops in Python: ~0.4 ms each): endpoints are
# compared within a share of the interval's width, several times the Monte-Carlo error measured here
RLIABLE_REPS = 5_000
WITHIN = 0.05


@pytest.fixture(scope="module")
def scores() -> tuple[np.ndarray, np.ndarray]:
    """Two algorithms x 10 runs x 3 tasks of very different scales, B a little better than A."""
    rng = np.random.default_rng(1)
    a = rng.normal(size=(10, 3)) * [1, 5, 20] + [0, 10, 100]
    return a, a + rng.normal(0.5, 1, size=(10, 3))


def _close(
    mine: tuple[float, float | None, float | None], point: float, low: float, high: float, within: float
) -> None:
    assert mine[0] == pytest.approx(point, rel=1e-12, abs=1e-12)
    assert abs(mine[1] - low) <= within * (high - low), (mine, low, high)
    assert abs(mine[2] - high) <= within * (high - low), (mine, low, high)


def test_aggregates_and_intervals_match_rliable(scores):
    a, _ = scores
    tasks = [a[:, t] for t in range(a.shape[1])]
    statistics = {s.name: s for s in (IQM, MEAN, MEDIAN, OPTIMALITY_GAP)}
    mine = bootstrap.interval_estimates([t / 100 for t in tasks], statistics, seed=0)
    np.random.seed(0)  # rliable draws from numpy's global generator
    points, intervals = library.get_interval_estimates(
        {"a": a / 100},
        lambda s: np.array(
            [
                metrics.aggregate_iqm(s),
                metrics.aggregate_mean(s),
                metrics.aggregate_median(s),
                metrics.aggregate_optimality_gap(s),
            ]
        ),
        reps=RLIABLE_REPS,
    )
    for i, name in enumerate(statistics):
        _close(mine[name], points["a"][i], intervals["a"][0, i], intervals["a"][1, i], WITHIN)


def test_probability_of_improvement_matches_rliable(scores):
    a, b = scores
    mine = bootstrap.probability_of_improvement([a[:, t] for t in range(3)], [b[:, t] for t in range(3)], seed=0)
    np.random.seed(0)
    points, intervals = library.get_interval_estimates({"a,b": (a, b)}, metrics.probability_of_improvement, reps=1_000)
    _close(
        mine, points["a,b"], intervals["a,b"][0, 0], intervals["a,b"][1, 0], 2 * WITHIN
    )  # 1,000 reps: twice the room


def test_one_env_median_and_iqm_intervals_match_scipys_bootstrap(scores):
    x = scores[0][:, 1]
    mine = bootstrap.interval_estimates([x], reported(Scores.RAW), seed=0)
    for name, statistic in (("median", np.median), ("iqm", lambda v, axis: stats.trim_mean(v, 0.25, axis=axis))):
        ci = stats.bootstrap(
            (x,), statistic, n_resamples=50_000, method="percentile", rng=np.random.default_rng(1)
        ).confidence_interval
        _close(mine[name], float(statistic(x, axis=-1)), ci.low, ci.high, WITHIN)
    assert mine["std"][0] == pytest.approx(x.std(ddof=1))


def test_one_run_has_no_interval():
    found = bootstrap.interval_estimates([np.array([3.0])], reported(Scores.RAW))
    assert found["mean"] == (3.0, None, None) and found["iqm"] == (3.0, None, None)
    assert np.isnan(found["std"][0]) and found["std"][1:] == (None, None)


def _resamples(n: int) -> np.ndarray:
    """Resamples of n runs as indices (reps, n): every one there is for n <= 4, else 2,000 drawn."""
    if n <= 4:
        return np.array(list(itertools.product(range(n), repeat=n)))
    return np.random.default_rng(n).integers(0, n, size=(2_000, n))


@pytest.mark.parametrize("statistic", [s for s in STATISTICS if s.of_counts], ids=lambda s: s.name)
@pytest.mark.parametrize("n", [2, 3, 4, 5, 8])
def test_a_statistics_form_of_counts_is_its_pooled_form(statistic, n):
    """On one task, the bootstrap computes a statistic from counts over the sorted runs: on every resample
    it must give what the statistic gives of the resampled runs themselves. Scores around 1 with ties, so
    that the optimality gap's cap and the median's and IQM's order statistics all matter."""
    v = np.sort(np.random.default_rng(n).choice([0.2, 0.5, 0.9, 1.0, 1.3, 2.0], size=n))
    draws = _resamples(n)
    counts = np.stack([np.bincount(row, minlength=n) for row in draws]).astype(np.float64)
    from_counts = statistic.of_counts(v, counts, np.cumsum(counts, axis=1))
    pooled = [float(statistic.pooled([v[row]])) for row in draws]
    np.testing.assert_allclose(from_counts, pooled, rtol=1e-12, atol=1e-12)


def test_a_statistic_without_a_form_of_counts_leaves_the_others_as_they_were(scores):
    """One task: a statistic declared without a form of counts is computed from the resamples the counts
    stand for; every other statistic keeps its form of counts and the very same numbers."""
    x = scores[0][:, 1]
    pooled_iqm = Statistic("pooled_iqm", "IQM", IQM.pooled, None, frozenset({Scores.RAW}))
    alone = bootstrap.interval_estimates([x], reported(Scores.RAW), seed=0)
    mixed = bootstrap.interval_estimates([x], {**reported(Scores.RAW), "pooled_iqm": pooled_iqm}, seed=0)
    assert {key: mixed[key] for key in alone} == alone
    assert mixed["pooled_iqm"] == pytest.approx(alone["iqm"], rel=1e-12)  # the same resamples


def test_no_two_statistics_share_a_key_and_groups_csv_has_each():
    """No two statistics share a key on any scores (reported() would keep only one of them), and
    groups.csv has a column for every key the report computes."""
    from rlexp.reporting.write import ESTIMATES

    for scores in Scores:
        assert len(reported(scores)) == sum(scores in s.on for s in STATISTICS), scores
    keys = {key for scores in Scores for key in reported(scores)}
    assert len(ESTIMATES) == len(set(ESTIMATES)) and set(ESTIMATES) == keys


def test_the_declared_probability_of_improvement_is_rliables(scores):
    """Its value on one task, averaged over tasks, is rliable's probability_of_improvement (ties half,
    and two equal groups 0.5), one task at a time or all at once (its batched form)."""
    a, b = scores
    poi = PROBABILITY_OF_IMPROVEMENT
    for x, y in ((a, b), (b, a), (np.round(a), np.round(b)), (a, a)):
        mine = np.mean([poi.of_runs(x[:, t], y[:, t]) for t in range(x.shape[1])])
        assert mine == pytest.approx(metrics.probability_of_improvement(x, y), rel=1e-12, abs=1e-12)
        assert mine == pytest.approx(np.mean(poi.of_runs(x.T, y.T)), rel=1e-12)


@pytest.mark.parametrize(("n", "m"), [(2, 2), (3, 2), (2, 4), (5, 8)])
def test_the_probability_of_improvements_form_of_counts_is_its_form_of_runs(n, m):
    """The bootstrap computes P(A > B) of each resample from counts over the sorted runs: on every pair of
    resamples it must give what the statistic gives of the resampled runs themselves (tied scores)."""
    rng = np.random.default_rng(10 * n + m)
    x, y = (np.sort(rng.choice([0.2, 0.5, 0.9, 1.0, 1.3], size=k)) for k in (n, m))
    draws_x, draws_y = _resamples(n), _resamples(m)
    draws_x, draws_y = draws_x[rng.integers(0, len(draws_x), 500)], draws_y[rng.integers(0, len(draws_y), 500)]
    cx = np.stack([np.bincount(row, minlength=n) for row in draws_x]).astype(np.int32)
    cy = np.stack([np.bincount(row, minlength=m) for row in draws_y]).astype(np.int32)
    cum_y = np.concatenate([np.zeros((len(cy), 1), np.int32), np.cumsum(cy, axis=1, dtype=np.int32)], axis=1)
    from_counts = PROBABILITY_OF_IMPROVEMENT.of_counts(x, y)(cx, cum_y)
    of_runs = [float(PROBABILITY_OF_IMPROVEMENT.of_runs(x[i], y[j])) for i, j in zip(draws_x, draws_y, strict=True)]
    np.testing.assert_allclose(from_counts, of_runs, rtol=1e-12, atol=1e-12)


def test_a_reports_comparisons_are_keyed_and_headed_as_declared(tmp_path):
    """report.json's comparison rows hold P(A > B) under its declared name, comparisons.csv in its declared
    columns and report.md under its label: a report that spelled it otherwise would fail here."""
    import json

    import yaml

    from rlexp.reporting.compute import ALL_ENVS, Settings, compute
    from rlexp.reporting.make_report import collect
    from rlexp.reporting.metrics import parse_metric
    from rlexp.reporting.write import comparisons_csv, markdown

    rng = np.random.default_rng(0)
    for lr in (0.001, 0.01, 0.1):
        for env in ("A-v0", "B-v0"):
            for seed in range(3 if lr != 0.1 or env == "A-v0" else 1):  # (one run: no interval)
                run = tmp_path / "runs" / f"{lr}_{env}_{seed}"
                run.mkdir(parents=True)
                final = float(rng.normal(100 * lr))
                summary = {"status": "completed", "algo": "ppo", "env_id": env, "seed": seed}
                (run / "summary.json").write_text(json.dumps({**summary, "final_eval": {"mean": final}}))
                config = {"algo": {"learning_rate": lr}, "seed": seed, "env": {"id": env}}
                (run / "config.yaml").write_text(yaml.safe_dump(config))
                np.savez(run / "evaluations.npz", timesteps=np.array([10, 20]), results=np.array([[0.0], [final]]))
    settings = Settings(metric=parse_metric("final"), reps=500, band_reps=50)
    report = compute(*collect([tmp_path / "runs"], settings.metric), settings)
    poi = PROBABILITY_OF_IMPROVEMENT
    rows = report.comparisons
    assert len(rows) == 9 and all(set(r.to_json()[poi.name]) == {"value", "low", "high"} for r in rows)
    assert any(r.improvement.low is None for r in rows) and any(r.improvement.low is not None for r in rows)
    table = list(csv.DictReader(io.StringIO(comparisons_csv(report))))
    assert len(table) == len(rows) and set(poi.columns()) <= set(table[0])
    for row, line in zip(rows, table, strict=True):
        for column, field in zip(poi.columns(), ("value", "low", "high"), strict=True):
            value = getattr(row.improvement, field)
            assert line[column] == ("" if value is None else str(value))
    for row in (r for r in rows if r.env != ALL_ENVS):
        x, y = (
            np.array([r.score for r in report.runs if (r.group, r.env) == (group, row.env)]) for group in (row.a, row.b)
        )
        assert row.improvement.value == float(poi.of_runs(x, y))
    md = markdown(report, {}, ["runs"])
    assert f"| A | B | env | {poi.label} |" in md and f"**{poi.label}**" in md


def test_one_run_against_others_has_no_interval():
    assert bootstrap.probability_of_improvement([np.array([1.0, 2.0, 3.0])], [np.array([2.5])]) == (
        pytest.approx(1 / 3),
        None,
        None,
    )


def test_performance_profile_runs_from_every_run_to_none(scores):
    """The taus of a report start below the lowest score: the lowest run counts, and tied runs too."""
    x = scores[0][:, 0]
    taus = np.array([x.min() - 1, x.min(), x.max()])
    point, low, high = bootstrap.performance_profile([x], taus, reps=200)
    assert point.tolist() == [1.0, 0.9, 0.0] and low[0] == high[0] == 1.0
    tied = bootstrap.performance_profile([np.full(5, 500.0)], np.array([499.0, 500.0]), reps=50)[0]
    assert tied.tolist() == [1.0, 0.0]


def test_ties_give_one_half():
    same = np.array([500.0, 500.0, 500.0])
    assert bootstrap.probability_of_improvement([same], [same], reps=100) == (0.5, 0.5, 0.5)


def test_welch_and_mann_whitney_are_scipys(scores):
    a, b = scores[0][:, 0], scores[1][:, 0]
    assert significance.welch_p(a, b) == stats.ttest_ind(a, b, equal_var=False).pvalue
    assert significance.mann_whitney_p(a, b) == stats.mannwhitneyu(a, b, alternative="two-sided").pvalue
    assert significance.welch_p(np.ones(3), np.ones(3)) is None  # no spread: undefined, not 0 or 1


def test_holm_matches_statsmodels():
    p = [0.01, 0.04, 0.03, 0.005, 0.2, 0.8]
    expected = multitest.multipletests(p, method="holm")[1]
    assert significance.holm(p) == pytest.approx(list(expected))
    assert significance.holm([0.01, None, 0.04]) == pytest.approx([0.02, None, 0.04])  # None: not counted


def test_hedges_g_by_hand():
    x, y = np.array([1.0, 2.0, 3.0, 4.0]), np.array([2.0, 3.0, 4.0, 5.0, 6.0])
    pooled = np.sqrt((3 * x.var(ddof=1) + 4 * y.var(ddof=1)) / 7)
    assert significance.hedges_g(x, y) == pytest.approx((x.mean() - y.mean()) / pooled * (1 - 3 / (4 * 9 - 9)))


def test_seeds_for_power_matches_statsmodels_at_equal_spread():
    """At equal sample variances Welch's degrees of freedom at equal n are Student's (2n - 2), so the
    answer must be statsmodels' t-test power solved for n, rounded up."""
    x = np.array([0.0, 1.0, 2.0, 3.0, 4.0])
    for shift in (1.0, 2.5, 6.0):
        y = x + shift
        d = shift / x.std(ddof=1)
        n = power.TTestIndPower().solve_power(effect_size=d, power=0.8, alpha=0.05, alternative="two-sided")
        assert significance.seeds_for_power(x, y) == int(np.ceil(n))
    assert significance.seeds_for_power(x, x) is None  # no difference: no number of seeds shows it


@pytest.mark.parametrize("n", [2, 3, 10, 37, 100])
def test_episode_scores_are_scipys_trim_mean_and_bootstrap(n):
    """rlexp.stats.scores (numpy only, for start-up) against scipy on the same data and generator."""
    from rlexp.stats.aggregates import iqm
    from rlexp.stats.scores import confidence_interval

    def trim(a, axis=-1):
        return stats.trim_mean(a, 0.25, axis=axis)

    x = np.random.default_rng(n).normal(size=n) * 100
    for scores in (x, np.round(x), np.full(n, 500.0)):  # distinct, tied, all equal
        assert iqm(scores) == trim(scores)
        for ours, theirs in ((np.mean, np.mean), (iqm, trim)):
            found = stats.bootstrap(
                (scores,),
                theirs,
                n_resamples=10_000,
                confidence_level=0.95,
                method="percentile",
                vectorized=True,
                rng=np.random.default_rng(7),
            ).confidence_interval
            np.testing.assert_allclose(confidence_interval(scores, ours, seed=7), [found.low, found.high], rtol=1e-12)
