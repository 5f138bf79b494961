"""Draw the learning curves of runs on one figure: training episode returns (rolling mean) and periodic
evaluations (mean, 95% CI) against steps, the random policy as a dashed line. Over 100 runs (a lab's
sweep), each group of runs instead (runs grouped as rlexp report groups them): its evaluations' IQM over
its runs with a 95% band; runs not completed, or unreadable, are left out.

Each RUN is a run dir, or a dir holding runs (a multirun's, a search's): all the runs under it. The
figure goes to --output; by default curves.<format> in the one dir given, else in the current dir.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rlexp.errors import ConfigError
from rlexp.reporting.report_runs import runs_in

FORMATS = ("png", "pdf", "svg")
GROUPED_ABOVE = 100  # runs: a figure of each run's curves shows nothing above it (and takes minutes)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("runs", nargs="+", type=Path, metavar="RUN", help="run dirs, or dirs holding runs")
    parser.add_argument(
        "--format", choices=FORMATS, default="png", help="png (default), pdf or svg, for the default file name"
    )
    parser.add_argument("--output", type=Path, help="the figure's file; its suffix gives the format")
    parser.add_argument("--title", help="the figure's title (default: none)")


def main(args: argparse.Namespace) -> int:
    run_dirs = [run for path in args.runs for run in runs_in(path)]
    if len(set(run_dirs)) < len(run_dirs):
        raise ConfigError(
            "a run is given twice: " + ", ".join(sorted({str(d) for d in run_dirs if run_dirs.count(d) > 1}))
        )
    if args.output is None:
        output = (args.runs[0] if len(args.runs) == 1 else Path.cwd()) / f"curves.{args.format}"
    else:  # its suffix gives the format; --format gives one to a name without suffix
        output = args.output if args.output.suffix else args.output.with_name(f"{args.output.name}.{args.format}")
        if output.suffix.lstrip(".") not in FORMATS:
            raise ConfigError(
                f"--output {output}: unknown format {output.suffix!r}; choose one of {', '.join(FORMATS)}"
            )
    if len(run_dirs) > GROUPED_ABOVE:
        return _draw_groups(run_dirs, output, args.title)
    from rlexp.figures.curves import draw, read_curves, run_labels

    curves = [read_curves(run, label) for run, label in zip(run_dirs, run_labels(run_dirs), strict=True)]
    if not any(c.train_returns.size or c.eval_mean.size for c in curves):
        raise ConfigError("no episode to draw yet: " + ", ".join(str(d) for d in run_dirs))
    print(f"rlexp plot: {len(curves)} run{'s' * (len(curves) > 1)} drawn to {draw(curves, output, args.title)}")
    unevaluated = [str(d) for d, c in zip(run_dirs, curves, strict=True) if not c.eval_mean.size]
    if unevaluated:
        print(f"rlexp plot: no periodic evaluations in {', '.join(unevaluated)} (callbacks.eval.freq=0?): not drawn")
    return 0


def _draw_groups(run_dirs: list[Path], output: Path, title: str | None) -> int:
    """Each group's evaluations (IQM over its completed runs, bootstrap band), one panel per env; a line
    for each run whose files are unreadable, and a count of the runs left out."""
    from rlexp.figures.report_figures import sample_efficiency
    from rlexp.files.atomic import atomic_write
    from rlexp.reporting.compute import Settings, group_curves
    from rlexp.reporting.make_report import env_grids
    from rlexp.reporting.metrics import Metric
    from rlexp.reporting.report_runs import assign_groups, damaged, read_run

    runs = [read_run(d) for d in run_dirs]
    left = [r for r in runs if r.left_out is not None]
    for run in left:
        if damaged(run.left_out):  # (damaged files: one line each; unfinished runs: counted)
            print(f"rlexp plot: left out {run.dir}: {run.left_out}")
    assign_groups(runs)
    used = [r for r in runs if r.left_out is None]
    settings = Settings(metric=Metric("final"))
    curves = group_curves(runs, env_grids(runs), settings)
    if not curves:
        raise ConfigError(f"no completed run with periodic evaluations among the {len(runs):,} runs given")
    groups = list(dict.fromkeys(r.group for r in used))
    atomic_write(output, lambda tmp: sample_efficiency(curves, groups, settings.confidence, tmp, title))
    skipped = f"; {len(left):,} left out (not completed, or unreadable)" if left else ""
    print(f"rlexp plot: {len(used):,} runs in {len(groups)} groups drawn to {output}{skipped}")
    return 0
