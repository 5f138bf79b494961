"""A report from paths to files: find the runs, score them, compute, write, draw. Shared by `rlexp report`
and by the end of a seed multirun (rlexp.run.seed_report)."""

from __future__ import annotations

import os
from pathlib import Path

from rlexp.errors import ConfigError
from rlexp.files.atomic import check_replaceable, replaced_dir
from rlexp.reporting.compute import Settings, compute
from rlexp.reporting.metrics import Grid, Metric, common_grid, score_runs
from rlexp.reporting.report_runs import ReportRun, assign_groups, read_run, runs_in
from rlexp.stats.aggregates import IQM, Scores
from rlexp.stats.report_record import GroupRow, ReportRecord


def find_runs(paths: list[Path]) -> list[ReportRun]:
    dirs = [run for path in paths for run in runs_in(path)]
    resolved = [d.resolve() for d in dirs]
    if len(set(resolved)) < len(resolved):
        twice = sorted({str(d) for d, r in zip(dirs, resolved, strict=True) if resolved.count(r) > 1})
        raise ConfigError("a run is given twice: " + ", ".join(twice))
    return [read_run(d) for d in dirs]


def default_out(paths: list[Path]) -> Path:
    """report/ in the one dir given, else in the dir holding all of them."""
    if len(paths) == 1:
        return paths[0] / "report"
    return Path(os.path.commonpath([p.resolve() for p in paths])) / "report"


def collect(
    paths: list[Path], metric: Metric, group_by: list[str] | None = None, settings: Settings | None = None
) -> tuple[list[ReportRun], dict[str, Grid | None]]:
    """The runs under ``paths``, grouped and scored, and each env's common step grid. Where ``settings``
    ask for references, each group's reference joins as a group of its own, and ``settings.references``
    says which group is compared with which."""
    runs = find_runs(paths)
    assign_groups(runs, group_by)
    if settings is not None and settings.reference:
        from rlexp.reporting.reference_group import reference_runs

        added, settings.references, settings.reference_notes, settings.zoo_published = reference_runs(runs, metric)
        runs = [*runs, *added]
    grids = env_grids(runs)
    score_runs(runs, metric, grids)
    return runs, grids


def env_grids(runs: list[ReportRun]) -> dict[str, Grid | None]:
    """Each env's common step grid over its used runs."""
    by_env: dict[str, list[ReportRun]] = {}
    for run in runs:
        if run.left_out is None:
            by_env.setdefault(run.env, []).append(run)
    return {env: common_grid(env_runs) for env, env_runs in by_env.items()}


def write_report(
    runs: list[ReportRun],
    grids: dict[str, Grid | None],
    out: Path,
    settings: Settings,
    inputs: list[Path],
    formats: tuple[str, ...] = ("png",),
) -> ReportRecord:
    """Computes the report of collected runs and writes it into ``out``; returns its record (report.json).

    Written whole in a new hidden sibling dir, then swapped in (rlexp.files.atomic.replaced_dir)."""
    from rlexp.figures.report_figures import draw_all
    from rlexp.reporting.write import write_all

    out = check_replaceable(out, inputs, "report.json")
    report = compute(runs, grids, settings)
    with replaced_dir(out) as staging:
        figures = draw_all(report, staging, list(dict.fromkeys(("png", *formats))))
        write_all(report, staging, figures, [str(p) for p in inputs])
    return report


def over_runs(row: GroupRow) -> str:
    """``over 4 seeds``, as the row's runs are: ``over 4 runs of seed 0`` where they share their seed (runs
    repeated, not seeds: their CI says nothing of other seeds), ``over 4 runs of 2 seeds`` where some do."""
    n, seeds = row.n, row.seeds
    distinct = sorted(set(seeds)) if seeds is not None else None
    if distinct is None or len(distinct) == n:
        return f"over {n} seed{'s' * (n != 1)}"
    if len(distinct) == 1:
        return f"over {n} runs of seed {distinct[0]}"
    return f"over {n} runs of {len(distinct)} seeds"


def aggregate_lines(report: ReportRecord, limit: int = 10) -> list[str]:
    """One line per group and env: IQM and its CI over the seeds (what a multirun prints at its end)."""
    confidence = report.settings.confidence
    lines = []
    for row in report.groups[:limit]:
        iqm = row.estimates[IQM.key(Scores.RAW)]
        ci = f" [{confidence:.0%} CI {iqm.low:.2f}, {iqm.high:.2f}]" if iqm.low is not None else ""
        lines.append(f"{row.group} on {row.env}: {IQM.label} {iqm.value:.2f}{ci} {over_runs(row)}")
    if len(report.groups) > limit:
        lines.append(f"... and {len(report.groups) - limit} more (groups.csv)")
    return lines
