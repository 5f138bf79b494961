"""Compare runs honestly: per group and env the seeds' IQM, mean, median and std with stratified
bootstrap confidence intervals (rliable's method, 50,000 repetitions); between groups the probability of
improvement, Welch's t-test and Mann-Whitney U (Holm-corrected), Hedges' g and the seeds that 80% power
would take; sample-efficiency curves and performance profiles.

Each PATH is a run dir, or a dir holding runs (a multirun's, a SLURM sweep's, a search's). Runs are
grouped by their composed config minus the seed (or by --group-by keys); each env is a task of its own.
Runs that failed, were interrupted or are still running are listed in the report and left out.
Written to --out (default: report/ in the one PATH, else next to them): report.md, groups.csv, runs.csv,
comparisons.csv, table.tex, report.json and the figures.

  rlexp report multirun/2026-12-01_10-00-00
  rlexp report multirun/ppo multirun/a2c --metric auc --baseline algo=ppo
  rlexp report multirun/sweep --group-by algo,algo.learning_rate --target 500
  rlexp report multirun/ppo-seeds --reference      # reproduced, below or above the shipped reference?
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import TYPE_CHECKING

from rlexp.commands.arguments import nonnegative_int, positive_int
from rlexp.errors import ConfigError

if TYPE_CHECKING:
    from rlexp.stats.report_record import ReportRecord

FORMATS = ("png", "pdf", "svg")


def _confidence(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"{text} must be between 0 and 1 (0.95 for 95%)")
    return value


def parse_targets(text: str | None) -> dict[str, float]:
    """``500`` (every env) or ``CartPole-v1=500,Pendulum-v1=-150`` (per env)."""
    if text is None:
        return {}
    targets: dict[str, float] = {}
    for item in text.split(","):
        env, _, value = item.rpartition("=")
        env = env.strip() or "*"
        try:
            score = float(value)
        except ValueError:
            raise ConfigError(
                f"--target {text}: {item!r} is not SCORE or ENV_ID=SCORE (e.g. 500, or CartPole-v1=500,Pendulum-v1=-150)"
            ) from None
        if not math.isfinite(score):
            raise ConfigError(f"--target {text}: {value.strip()} is not a finite score")
        if env in targets:
            raise ConfigError(f"--target {text}: {'every env' if env == '*' else env} is given two targets")
        targets[env] = score
    return targets


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="run dirs, or dirs holding runs")
    parser.add_argument("--group-by", help="config keys whose values name the groups: algo,algo.learning_rate")
    parser.add_argument("--metric", default="final", help="final (default), best, curve, auc or at:STEP")
    parser.add_argument(
        "--out", type=Path, help="the report's dir (default: report/ in the one PATH, else in the dir holding them)"
    )
    parser.add_argument("--target", help="the score that counts as solved: SCORE, or ENV_ID=SCORE,... per env")
    parser.add_argument(
        "--baseline", help="compare each group with this one (default: every pair; over 12 groups, each with the best)"
    )
    parser.add_argument(
        "--reference",
        action="store_true",
        help="add the reference results of each group's tuned file as a group, and say whether each group "
        "reproduced it (--metric final at the tuned budget, or at:STEP)",
    )
    parser.add_argument("--reps", type=positive_int, default=50_000, help="bootstrap repetitions (50000, rliable's)")
    parser.add_argument("--ci", type=_confidence, default=0.95, help="confidence level of the intervals (0.95)")
    parser.add_argument("--seed", type=nonnegative_int, default=0, help="the bootstrap's RNG seed (0)")
    parser.add_argument("--format", choices=FORMATS, default="png", help="figures' format (png; report.md embeds PNGs)")


def main(args: argparse.Namespace) -> int:
    report, out = make(args)
    counts = report.counts
    from rlexp.reporting.report_runs import damaged

    for row in report.runs:  # damaged files: one line each (unfinished runs: counted, listed in report.md)
        if damaged(row.left_out):
            print(f"rlexp report: left out {row.run_dir}: {row.left_out}")
    left = f", {counts.left_out} left out (listed in report.md)" if counts.left_out else ""
    print(f"rlexp report: {counts.used} runs in {counts.groups} group{'s' * (counts.groups != 1)}{left}")
    from rlexp.reporting.make_report import aggregate_lines

    for line in aggregate_lines(report):
        print(f"  {line}")
    for line in reference_lines(report):
        print(f"rlexp report: {line}")

    for env, why in report.uncurved.items():
        what = "no sample_efficiency.png" if not report.curves else f"sample_efficiency.png leaves out {env}"
        print(f"rlexp report: {what}: {env}: {why}")
    print(f"rlexp report: written to {out / 'report.md'}")
    return 0


def reference_lines(report: ReportRecord) -> list[str]:
    """One line per group compared with its reference: the verdict and the test that decided it; and one per
    group shown beside RL Zoo's published score instead."""
    from rlexp.stats.aggregates import IQM
    from rlexp.stats.significance import ALPHA

    lines = []
    for r in report.reference_verdicts:
        p = r.mann_whitney_p_holm
        test = (
            "a single run: no test"
            if p is None
            else f"Mann-Whitney U p = {r.mann_whitney_p:.3g}, Holm {p:.3g}"
            + (f" < {ALPHA}" if p < ALPHA else f" >= {ALPHA}")
        )
        lines.append(
            f"{r.group} on {r.env}: {r.verdict} against the {r.reference} ({test}; {IQM.label} "
            f"{r.iqm:.1f} over {r.n} seed{'s' * (r.n != 1)} vs {r.reference_iqm:.1f} over "
            f"{r.n_reference})"
        )
    return lines + [r["line"] for r in report.zoo_published]


def make(args: argparse.Namespace) -> tuple[ReportRecord, Path]:
    """Computes and writes the report; returns its record (report.json) and its dir."""
    from rlexp.files.atomic import check_replaceable
    from rlexp.reporting.compute import Settings
    from rlexp.reporting.make_report import collect, default_out, write_report
    from rlexp.reporting.metrics import parse_metric

    settings = Settings(
        metric=parse_metric(args.metric),
        reps=args.reps,
        confidence=args.ci,
        seed=args.seed,
        targets=parse_targets(args.target),
        baseline=args.baseline,
        reference=args.reference,
    )
    group_by = [k.strip() for k in args.group_by.split(",") if k.strip()] if args.group_by is not None else None
    if group_by == []:
        raise ConfigError("--group-by: give config keys, e.g. --group-by algo,algo.learning_rate")
    out = check_replaceable(args.out or default_out(args.paths), args.paths, "report.json")  # before the work
    runs, grids = collect(args.paths, settings.metric, group_by, settings)
    report = write_report(runs, grids, out, settings, args.paths, (args.format,))
    return report, out
