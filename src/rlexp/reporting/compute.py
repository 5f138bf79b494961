"""Every number of a report, from scored runs: per group and env, between groups, curves and profiles.

The result is one typed record (rlexp.stats.report_record.ReportRecord, report.json); the tables, the LaTeX
and the figures are drawn from it and never recompute a number. Each cell's bootstrap uses the same RNG seed, so that a group's interval does
not change when another group is added to the report."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from itertools import combinations
from typing import Any

import numpy as np

from rlexp.errors import ConfigError
from rlexp.reporting.metrics import Grid, Metric, on_grid, why_no_grid
from rlexp.reporting.report_runs import ReportRun, differing_keys
from rlexp.stats import bootstrap, significance
from rlexp.stats.aggregates import IQM, PROBABILITY_OF_IMPROVEMENT, Scores, reported
from rlexp.stats.report_record import (
    ALL_ENVS,
    ALL_ENVS_NORMALIZED,
    Band,
    Comparison,
    Counts,
    Curve,
    Estimate,
    GroupRow,
    Normalization,
    Profile,
    ReferenceVerdict,
    ReportRecord,
    ReportSettings,
    RunRow,
)

BAND_REPS = 2_000  # resamples for the bands of the figures: a band to see, not a number to report
PROFILE_POINTS = 101
MAX_ALL_PAIRS = 12  # groups compared pair by pair, at most; more (a grid or a search): each against the best
REFERENCE_TEST = (
    "Mann-Whitney U, two-sided, of the group's scores against the reference seeds', Holm-corrected over the "
    "groups compared with a reference: reproduced when p >= 0.05, else below or above by P(run > reference seed)"
)


@dataclass
class Settings:
    """Everything that changes a number of the report; written into it as it is."""

    metric: Metric
    reps: int = bootstrap.REPS
    confidence: float = bootstrap.CONFIDENCE
    seed: int = 0
    targets: dict[str, float] = field(default_factory=dict)  # env id (or "*": every env) -> target score
    baseline: str | None = None
    band_reps: int = BAND_REPS
    reference: bool = False  # --reference: each group against the reference of its tuned file
    # (group, env, reference group): the groups compared with their reference, and why others are not
    references: list[tuple[str, str, str]] = field(default_factory=list)
    reference_notes: list[str] = field(default_factory=list)
    # RL Zoo's published score of the groups of a tuned pair without a reference (shown, not compared)
    zoo_published: list[dict[str, Any]] = field(default_factory=list)

    def target(self, env: str) -> float | None:
        return self.targets.get(env, self.targets.get("*"))

    def record(self) -> ReportSettings:
        return ReportSettings(
            metric=self.metric.text(),
            metric_means=self.metric.describe(),
            bootstrap="stratified over runs within each env (rliable's), percentile intervals",
            method=bootstrap.METHOD,
            reps=self.reps,
            confidence=self.confidence,
            rng_seed=self.seed,
            band_reps=self.band_reps,
            targets=self.targets,
            baseline=self.baseline,
            tests="Welch's t-test and Mann-Whitney U, two-sided, Holm-corrected over all comparisons",
            power={"power": significance.POWER, "alpha": significance.ALPHA, "test": "Welch, two-sided"},
            effect_size="Hedges' g (pooled std, small-sample corrected)",
            reference_test=REFERENCE_TEST if self.references else None,
            references=tuple(self.references),
        )


def _estimate(value: tuple[float, float | None, float | None]) -> Estimate:
    point, low, high = value
    return Estimate(point if np.isfinite(point) else None, low, high)


def _listed(values: np.ndarray) -> list[float | None]:
    """A JSON list: NaN (no band from one run) as null, which every JSON reader takes."""
    return [float(v) if np.isfinite(v) else None for v in values]


@dataclass
class _Cells:
    """The scored runs by group and env, with what the tables need besides: one argument for all of them."""

    runs: dict[tuple[str, str], list[ReportRun]]
    groups: list[str]  # in the order of the runs (natural order of their dirs)
    envs: list[str]
    grids: dict[str, Grid | None]
    norm: dict[str, Normalization]  # (only envs with a target)
    s: Settings

    def has(self, group: str, env: str) -> bool:
        return bool(self.runs.get((group, env)))

    def scores(self, group: str, env: str) -> np.ndarray:
        return np.array([r.score for r in self.runs[group, env]], dtype=np.float64)

    def normalized(self, group: str, env: str) -> np.ndarray:
        n = self.norm[env]
        return (self.scores(group, env) - n.random) / (n.target - n.random)

    def on_every_env(self, group: str) -> bool:
        return all(self.has(group, env) for env in self.envs)

    @cached_property
    def best(self) -> str:
        """The group of the best IQM rank averaged over the envs it ran on (ranks: the envs' scales differ)."""
        ranks: dict[str, list[int]] = {g: [] for g in self.groups}
        for env in self.envs:
            present = [g for g in self.groups if self.has(g, env)]
            for rank, g in enumerate(sorted(present, key=lambda g: -float(bootstrap.iqm(self.scores(g, env))))):
                ranks[g].append(rank)
        return min(self.groups, key=lambda g: np.mean(ranks[g]) if ranks[g] else np.inf)


def _randoms(runs: list[ReportRun], envs: list[str]) -> dict[str, float | None]:
    """Each env's random-policy return (summary.json random_baseline, averaged over the runs)."""
    out: dict[str, float | None] = {}
    for env in envs:
        values = [r.record.random_score for r in runs if r.env == env and r.record.random_score is not None]
        out[env] = float(np.mean(values)) if values else None
    return out


def _group_rows(c: _Cells) -> list[GroupRow]:
    s, rows = c.s, []
    for group in c.groups:
        for env in c.envs:
            if not c.has(group, env):
                continue
            x = c.scores(group, env)
            found = bootstrap.interval_estimates([x], reported(Scores.RAW), s.reps, s.confidence, s.seed)
            estimates = {name: _estimate(value) for name, value in found.items()}
            if env in c.norm:
                found = bootstrap.interval_estimates(
                    [c.normalized(group, env)], reported(Scores.NORMALIZED), s.reps, s.confidence, s.seed
                )
                estimates.update({name: _estimate(value) for name, value in found.items()})
            seeds = tuple(r.seed for r in c.runs[group, env])
            rows.append(GroupRow(group, env, int(x.size), seeds, estimates))
    return rows


def _aggregates_over_envs(c: _Cells) -> bool:
    return len(c.envs) > 1 and all(env in c.norm for env in c.envs)


def _aggregate_rows(c: _Cells) -> list[GroupRow]:
    """Normalized scores over all envs (only with a target for each): the stratified bootstrap proper."""
    if not _aggregates_over_envs(c):
        return []
    aggregates = reported(Scores.OVER_ENVS)
    rows = []
    for group in filter(c.on_every_env, c.groups):
        tasks = [c.normalized(group, env) for env in c.envs]
        found = bootstrap.interval_estimates(tasks, aggregates, c.s.reps, c.s.confidence, c.s.seed)
        estimates = {name: _estimate(value) for name, value in found.items()}
        rows.append(GroupRow(group, ALL_ENVS, int(sum(t.size for t in tasks)), None, estimates))
    return rows


def _seeds_for_power(x: np.ndarray, y: np.ndarray) -> int | str | None:
    """None where it is undefined (a group of one run, or no difference); "> 10000" where out of reach."""
    n = significance.seeds_for_power(x, y)
    if n is None and x.size > 1 and y.size > 1 and x.mean() != y.mean():
        return f"> {significance.MAX_SEEDS}"
    return n


def _pairs(c: _Cells) -> list[tuple[str, str]]:
    baseline = c.s.baseline
    if baseline is None and len(c.groups) > MAX_ALL_PAIRS:
        baseline = c.best
    if baseline is None:
        return list(combinations(c.groups, 2))
    return [(g, baseline) for g in c.groups if g != baseline]


def _comparisons(c: _Cells) -> list[Comparison]:
    s = c.s
    pairs = _pairs(c)
    improvements = {  # per env, every pair at once: each group resampled once for all its pairs
        env: bootstrap.pairwise_improvement(
            {g: c.scores(g, env) for g in c.groups if c.has(g, env)},
            [(a, b) for a, b in pairs if c.has(a, env) and c.has(b, env)],
            s.reps,
            s.confidence,
            s.seed,
        )
        for env in c.envs
    }
    rows: list[dict[str, Any]] = []  # (the arguments of each Comparison: the Holm columns come last)
    for a, b in pairs:
        shared = [env for env in c.envs if c.has(a, env) and c.has(b, env)]
        for env in shared:
            x, y = c.scores(a, env), c.scores(b, env)
            rows.append(
                {
                    "a": a,
                    "b": b,
                    "env": env,
                    "improvement": Estimate(*improvements[env][a, b]),
                    "n_a": int(x.size),
                    "n_b": int(y.size),
                    "difference_of_means": float(x.mean() - y.mean()),
                    "welch_p": significance.welch_p(x, y),
                    "mann_whitney_p": significance.mann_whitney_p(x, y),
                    "hedges_g": significance.hedges_g(x, y),
                    "seeds_for_power": _seeds_for_power(x, y),
                }
            )
        if len(shared) > 1:  # rank-based: no normalization needed to average over envs
            xs, ys = [c.scores(a, env) for env in shared], [c.scores(b, env) for env in shared]
            found = bootstrap.probability_of_improvement(xs, ys, s.reps, s.confidence, s.seed)
            rows.append({"a": a, "b": b, "env": ALL_ENVS, "improvement": Estimate(*found), "envs": tuple(shared)})
    per_env = [r for r in rows if "envs" not in r]
    for test in ("welch_p", "mann_whitney_p"):
        for row, adjusted in zip(per_env, significance.holm([r[test] for r in per_env]), strict=True):
            row[f"{test}_holm"] = adjusted
    return [Comparison(**row) for row in rows]


def _reference_verdicts(c: _Cells) -> list[ReferenceVerdict]:
    """Each group compared with its reference: did it reproduce what its tuned file should reach? The
    report's own test (Mann-Whitney U: no normality, which RL's scores lack), Holm-corrected over these
    verdicts; "undecided" for a single run, where the test says nothing."""
    compared = []
    for group, env, reference in c.s.references:
        if not (c.has(group, env) and c.has(reference, env)):
            continue
        x, y = c.scores(group, env), c.scores(reference, env)
        beats = float(PROBABILITY_OF_IMPROVEMENT.of_runs(x, y))  # P(X > Y), ties half: the point of P(A > B)
        compared.append((group, env, reference, x, y, beats, significance.mann_whitney_p(x, y)))
    rows = []
    adjusted_ps = significance.holm([p for *_, p in compared])
    for (group, env, reference, x, y, beats, p), adjusted in zip(compared, adjusted_ps, strict=True):
        if adjusted is None:
            verdict = "undecided"
        elif adjusted >= significance.ALPHA:
            verdict = "reproduced"
        else:
            verdict = "above" if beats > 0.5 else "below"
        iqm, reference_iqm = float(IQM.pooled([x])), float(IQM.pooled([y]))
        rows.append(
            ReferenceVerdict(
                group, env, reference, int(x.size), int(y.size), iqm, reference_iqm, beats, p, adjusted, verdict
            )
        )
    return rows


def _curves(c: _Cells) -> dict[str, Curve]:
    out: dict[str, Curve] = {}
    for env in c.envs:
        grid = c.grids.get(env)
        if grid is None:
            continue
        bands: dict[str, Band] = {}
        for group in c.groups:
            cell = [r for r in c.runs.get((group, env), []) if r.eval_steps.size]
            if not cell:
                continue
            curves = np.stack([on_grid(r, grid) for r in cell])
            point, low, high = bootstrap.curve_band(curves, c.s.band_reps, c.s.confidence, c.s.seed)
            bands[group] = Band(_listed(point), _listed(low), _listed(high), runs=len(cell))
        out[env] = Curve(grid.steps.tolist(), grid.interpolated, bands)
    return out


def _profiles(c: _Cells) -> dict[str, Profile]:
    """Performance profiles: per env on raw scores; over all envs on normalized ones when each has a target."""
    panels: dict[str, dict[str, list[np.ndarray]]] = {
        env: {g: [c.scores(g, env)] for g in c.groups if c.has(g, env)} for env in c.envs
    }
    if _aggregates_over_envs(c):
        panels[ALL_ENVS_NORMALIZED] = {
            g: [c.normalized(g, env) for env in c.envs] for g in filter(c.on_every_env, c.groups)
        }
    out: dict[str, Profile] = {}
    for name, by_group in panels.items():
        if not by_group:  # (no group ran on every env: no profile over all of them)
            continue
        every = np.concatenate([x for tasks in by_group.values() for x in tasks])
        span = float(every.max() - every.min())
        margin = 0.05 * span if span > 0 else max(1.0, 0.05 * abs(float(every.min())))
        # from below the lowest score: a profile starts at 1 (every run above) and ends at 0
        taus = np.linspace(every.min() - margin, every.max() + margin, PROFILE_POINTS)
        bands: dict[str, Band] = {}
        for group, tasks in by_group.items():
            point, low, high = bootstrap.performance_profile(tasks, taus, c.s.band_reps, c.s.confidence, c.s.seed)
            bands[group] = Band(point.tolist(), low.tolist(), high.tolist())
        out[name] = Profile(taus.tolist(), bands)
    return out


def _notes(c: _Cells, randoms: dict[str, float | None]) -> list[str]:
    notes = []
    for env in c.envs:
        counts = {g: len(c.runs[g, env]) for g in c.groups if c.has(g, env)}
        if len(set(counts.values())) > 1:
            notes.append(
                f"unequal seeds on {env}: "
                + ", ".join(f"{g}: {n}" for g, n in counts.items())
                + " (each group's numbers use all of its runs; none is dropped to even them out)"
            )
        for g in counts:
            seeds = [str(r.seed) for r in c.runs[g, env]]
            repeated = sorted({x for x in seeds if seeds.count(x) > 1})
            if repeated:
                notes.append(
                    f"{g} on {env}: seed {', '.join(repeated)} more than once (runs of the same seed are not independent)"
                )
        grid = c.grids.get(env)
        if grid is not None and grid.interpolated:
            notes.append(
                f"{env}: the runs' evaluation schedules differ; their curves are interpolated onto {grid.steps.size} "
                f"evenly spaced steps from {grid.steps[0]:,.0f} to {grid.steps[-1]:,.0f} (the span every run evaluated)"
            )
        if env in c.norm and randoms[env] is None:
            notes.append(f"{env}: no random-policy return recorded; normalized scores are score / target")
    if len(c.envs) > 1:
        partial = [g for g in c.groups if not c.on_every_env(g)]
        if partial:
            notes.append(
                "not on every env: "
                + "; ".join(f"{g} ({', '.join(e for e in c.envs if c.has(g, e))})" for g in partial)
                + ": left out of the aggregates over all envs; its comparisons over all envs average the envs both groups ran on"
            )
    if c.s.baseline is None and len(c.groups) > MAX_ALL_PAIRS:
        notes.append(
            f"{len(c.groups)} groups: each is compared with the best ({c.best}, by IQM rank averaged over envs), "
            "not every pair with every other (--baseline to choose)"
        )
    if c.s.targets and len(c.envs) > 1 and not all(env in c.norm for env in c.envs):
        notes.append("no target for " + ", ".join(e for e in c.envs if e not in c.norm) + ": no aggregate over envs")
    elif len(c.envs) > 1 and not c.s.targets:
        notes.append("several envs and no --target: each env is reported on its own (give --target to aggregate)")
    return notes


def _normalization(s: Settings, envs: list[str], randoms: dict[str, float | None]) -> dict[str, Normalization]:
    unknown = sorted(set(s.targets) - {"*", *envs})
    if unknown:
        from rlexp.config.validation import did_you_mean

        raise ConfigError(
            f"--target: no run on {', '.join(unknown)}{did_you_mean(unknown[0], envs)}; envs: {', '.join(envs)}"
        )
    norm: dict[str, Normalization] = {}
    for env in envs:
        target = s.target(env)
        if target is None:
            continue
        known = randoms[env]
        random = known if known is not None else 0.0
        if target == random:
            raise ConfigError(
                f"--target {target:g} for {env}: equal to its random-policy return; no scale to normalize by"
            )
        norm[env] = Normalization(target, random)
    return norm


def compute(runs: list[ReportRun], grids: dict[str, Grid | None], s: Settings) -> ReportRecord:
    """The report of ``runs`` (scored: see rlexp.reporting.metrics), as one typed record."""
    used = [r for r in runs if r.left_out is None]
    if not used:
        raise ConfigError(
            "no run to report on: "
            + "; ".join(f"{r.dir}: {r.left_out}" for r in runs[:5])
            + (f" (and {len(runs) - 5} more)" if len(runs) > 5 else "")
        )
    groups, envs = list(dict.fromkeys(r.group for r in used)), sorted({r.env for r in used})
    if s.baseline is not None and s.baseline not in groups:
        from rlexp.config.validation import did_you_mean

        holding = [g for g in groups if s.baseline in g]  # --baseline ppo for the group algo=ppo
        hint = f" (did you mean {holding[0]}?)" if len(holding) == 1 else did_you_mean(s.baseline, groups)
        raise ConfigError(f"--baseline {s.baseline!r}: no such group{hint}; groups: " + "; ".join(groups))
    randoms = _randoms(used, envs)
    c = _Cells(_by_cell(used), groups, envs, grids, _normalization(s, envs, randoms), s)
    differing = differing_keys(used)
    return ReportRecord(
        settings=s.record(),
        counts=Counts(len(runs), len(used), len(runs) - len(used), len(groups), tuple(envs)),
        groups_order=tuple(groups),
        normalization=c.norm,
        notes=tuple(_notes(c, randoms) + s.reference_notes),
        groups=tuple(_group_rows(c)),
        aggregate=tuple(_aggregate_rows(c)),
        comparisons=tuple(_comparisons(c)),
        reference_verdicts=tuple(_reference_verdicts(c)),
        zoo_published=tuple(s.zoo_published),
        curves=_curves(c),
        # envs without curves, and why
        uncurved={env: why_no_grid([r for r in used if r.env == env]) for env in envs if grids.get(env) is None},
        profiles=_profiles(c),
        runs=tuple(_run_row(r, differing) for r in runs),
    )


def _by_cell(used: list[ReportRun]) -> dict[tuple[str, str], list[ReportRun]]:
    cells: dict[tuple[str, str], list[ReportRun]] = {}
    for run in used:
        cells.setdefault((run.group, run.env), []).append(run)
    return cells


def group_curves(runs: list[ReportRun], grids: dict[str, Grid | None], s: Settings) -> dict[str, Curve]:
    """Only the report's learning curves (each group's IQM over its runs at common steps, with its band):
    what ``rlexp plot`` draws for more runs than a figure of each run can show."""
    cells = _by_cell([r for r in runs if r.left_out is None])
    groups = list(dict.fromkeys(group for group, _ in cells))
    return _curves(_Cells(cells, groups, sorted({env for _, env in cells}), grids, {}, s))


def _run_row(run: ReportRun, keys: list[str]) -> RunRow:
    flat = run.flat
    return RunRow(
        run_dir=str(run.dir),
        group=run.group or None,
        env=run.env,
        algo=run.algo,
        seed=run.seed,
        status=run.status,
        score=run.score,
        used=run.left_out is None,
        left_out=run.left_out,
        final_eval=run.record.final_score,
        best_eval=run.record.best_score,
        steps_done=run.record.steps,
        config={k: flat.get(k) for k in keys},
    )
