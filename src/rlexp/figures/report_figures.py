"""The report's figures, drawn from its record's numbers (never recomputed): sample-efficiency curves,
interval estimates of the aggregates, performance profiles. One panel per env."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rlexp.stats.aggregates import IQM, STATISTICS, Scores
from rlexp.stats.report_record import ALL_ENVS_NORMALIZED, Curve, ReportRecord

MAX_LABEL = 45
MAX_LEGEND = 10  # groups named in a legend, at most: more (a search's trials) would hide the curves
# the interval estimates' columns: the statistics of both an env's scores and all envs' (every row has them)
PANELS = tuple(s for s in STATISTICS if {Scores.RAW, Scores.OVER_ENVS} <= s.on)


def _short(label: str) -> str:
    return label if len(label) <= MAX_LABEL else label[: MAX_LABEL - 3] + "..."


def _colors(groups: Sequence[str]) -> dict[str, str]:
    return {g: f"C{i % 10}" for i, g in enumerate(groups)}


def _save(fig: Any, path: Path) -> Path:
    fig.savefig(path, format=path.suffix.lstrip("."), dpi=110)  # (into the staging dir: swapped in whole)
    return path


def _panels(n: int, width: float, height: float) -> tuple[Any, list[Any]]:
    from matplotlib.figure import Figure  # no pyplot: no global backend or figure state

    cols = min(n, 3)
    rows = -(-n // cols)
    fig = Figure(figsize=(width * cols, height * rows), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False).ravel().tolist()
    for ax in axes[n:]:
        ax.set_visible(False)
    return fig, axes[:n]


def sample_efficiency(
    curves: Mapping[str, Curve],
    groups: Sequence[str],
    confidence: float,
    path: Path,
    title: str | None = None,
    references: Collection[str] = (),
) -> Path | None:
    """Each group's IQM curve with its band, one panel per env; ``references`` (--reference's groups) grey
    and dashed."""
    from matplotlib.ticker import EngFormatter

    if not curves:
        return None
    colors = _colors(list(groups))
    colors.update({r: "0.3" for r in references})  # a reference: grey and dashed, behind the groups
    fig, axes = _panels(len(curves), 5.2, 3.6)
    for ax, (env, entry) in zip(axes, curves.items(), strict=True):
        steps = np.asarray(entry.steps)
        for group, c in entry.groups.items():
            ax.plot(
                steps,
                c.point,
                "--" if group in references else "-",
                marker="o" if steps.size < 30 else None,
                ms=3,
                color=colors[group],
                label=_short(group),
            )
            low, high = np.asarray(c.low, dtype=float), np.asarray(c.high, dtype=float)
            ax.fill_between(steps, low, high, color=colors[group], alpha=0.2, lw=0)
        ax.set(
            title=env + (" (interpolated)" if entry.interpolated else ""), xlabel="steps", ylabel="evaluation return"
        )
        ax.xaxis.set_major_formatter(EngFormatter(sep=""))
        ax.grid(alpha=0.3)
    if len(groups) <= MAX_LEGEND:
        axes[0].legend(
            fontsize="small", loc="best", title=f"{IQM.label} over seeds, {confidence:.0%} band", title_fontsize="small"
        )
    if title:
        fig.suptitle(title)
    return _save(fig, path)


def _sample_efficiency(report: ReportRecord, path: Path) -> Path | None:
    s = report.settings
    return sample_efficiency(report.curves, report.groups_order, s.confidence, path, references=s.reference_groups)


def interval_estimates(report: ReportRecord, path: Path) -> Path | None:
    """Each group's PANELS (IQM, mean, median) with their CIs, one row of panels per env (and for all envs)."""
    from matplotlib.figure import Figure

    rows = [(env, report.rows(env)) for env in report.counts.envs]
    if report.aggregate:
        rows.append((ALL_ENVS_NORMALIZED, list(report.aggregate)))
    groups = report.groups_order
    colors = _colors(groups)
    fig = Figure(figsize=(11, 0.9 + 0.32 * len(groups) * len(rows) + 0.5 * len(rows)), layout="constrained")
    axes = fig.subplots(len(rows), len(PANELS), squeeze=False)
    for i, (env, entries) in enumerate(rows):
        for j, statistic in enumerate(PANELS):
            ax = axes[i][j]
            scores = Scores.OVER_ENVS if env == ALL_ENVS_NORMALIZED else Scores.RAW
            title = statistic.label
            for k, row in enumerate(entries):
                estimate = row.estimate(statistic, scores)
                if estimate is None or estimate.value is None:
                    continue
                y = len(entries) - 1 - k
                low, high = estimate.low, estimate.high
                if low is not None and high is not None:
                    ax.barh(y, high - low, left=low, height=0.6, color=colors[row.group], alpha=0.6)
                ax.plot([estimate.value] * 2, [y - 0.3, y + 0.3], color="k", lw=1.5)
            ax.set_yticks(range(len(entries)), [_short(r.group) for r in reversed(entries)] if j == 0 else [])
            ax.set_title(f"{title}: {env}" if j == 0 else title, fontsize="medium", loc="left" if j == 0 else "center")
            ax.grid(axis="x", alpha=0.3)
    fig.suptitle(
        f"{report.settings.confidence:.0%} stratified bootstrap CIs, {report.settings.reps:,} repetitions",
        fontsize="medium",
    )
    return _save(fig, path)


def performance_profiles(report: ReportRecord, path: Path) -> Path | None:
    profiles = {name: p for name, p in report.profiles.items() if p.taus}
    if not profiles:
        return None
    colors = _colors(list(report.groups_order))
    fig, axes = _panels(len(profiles), 5.2, 3.6)
    for ax, (name, entry) in zip(axes, profiles.items(), strict=True):
        taus = np.asarray(entry.taus)
        for group, p in entry.groups.items():
            ax.plot(taus, p.point, color=colors[group], label=_short(group), drawstyle="steps-post")
            ax.fill_between(taus, p.low, p.high, color=colors[group], alpha=0.2, lw=0, step="post")
        ax.set(
            title=name,
            xlabel="score τ" + (" (normalized)" if "normalized" in name else ""),
            ylabel="fraction of runs > τ",
            ylim=(-0.02, 1.02),
        )
        ax.grid(alpha=0.3)
    if len(report.groups_order) <= MAX_LEGEND:
        axes[0].legend(fontsize="small", loc="best")
    return _save(fig, path)


FIGURES: dict[str, Callable[[ReportRecord, Path], Path | None]] = {
    "sample_efficiency": _sample_efficiency,
    "scores": interval_estimates,
    "performance_profile": performance_profiles,
}


def draw_all(report: ReportRecord, out: Path, formats: list[str]) -> dict[str, list[Path]]:
    """Each figure in each format (PNG always: report.md embeds it); name -> files written."""
    written: dict[str, list[Path]] = {}
    for name, draw in FIGURES.items():
        for fmt in formats:
            path = draw(report, out / f"{name}.{fmt}")
            if path is not None:
                written.setdefault(name, []).append(path)
    return written
