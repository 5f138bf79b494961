"""What one number per run is (--metric), and the learning curves of an env's runs on one step grid."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.integrate import trapezoid

from rlexp.errors import ConfigError
from rlexp.reporting.report_runs import ReportRun

METRICS = {
    "final": "the final evaluation's mean return (summary.json final_eval)",
    "best": "the best periodic evaluation's mean return (summary.json best_eval)",
    "curve": "the periodic evaluations' mean return at the last step of the env's common grid (the last every run reached)",
    "auc": "the mean return over the env's common step grid: the area under the learning curve over its length",
    "at:STEP": "the periodic evaluations' mean return at STEP, interpolated between the evaluations around it",
}


@dataclass
class Metric:
    name: str  # final, best, curve, auc or at
    step: float | None = None

    def text(self) -> str:
        """As given on the command line, exactly: at:1234567, not at:1.23457e+06."""
        if self.step is None:
            return self.name
        return f"at:{self.step:.0f}" if self.step.is_integer() else f"at:{self.step!r}"

    def describe(self) -> str:
        if self.name == "at":
            return METRICS["at:STEP"].replace("STEP", f"step {self.step:,.0f}")
        return METRICS[self.name]


def parse_metric(text: str) -> Metric:
    if text.startswith("at:"):
        try:
            step = float(text[3:].replace("_", ""))
        except ValueError:
            raise ConfigError(f"--metric {text}: at:STEP takes a step number, e.g. at:50000") from None
        if not math.isfinite(step) or step < 0:
            raise ConfigError(f"--metric {text}: the step must be a number >= 0")
        return Metric("at", step)
    if text not in METRICS or text == "at:STEP":
        raise ConfigError(f"--metric {text}: choose one of final, best, curve, auc, at:STEP")
    return Metric(text)


@dataclass
class Grid:
    """An env's common step grid: every run of the env has evaluations from its first to its last step."""

    steps: np.ndarray
    interpolated: bool  # the runs' evaluation schedules differ: their curves are interpolated onto the grid


def common_grid(runs: list[ReportRun]) -> Grid | None:
    """The grid of one env's runs over the span all of them evaluated (first to last): their schedule
    there when they share it (runs of one evaluation frequency but different budgets do), else as many
    evenly spaced steps as the densest schedule has there. None when no run has evaluations or the spans
    do not overlap; runs without evaluations are not on it."""
    schedules = [r.eval_steps for r in runs if r.eval_steps.size]
    if not schedules:
        return None
    low, high = max(float(s[0]) for s in schedules), min(float(s[-1]) for s in schedules)
    if high < low:
        return None
    spans = [s[(s >= low) & (s <= high)] for s in schedules]
    if all(np.array_equal(s, spans[0]) for s in spans):
        return Grid(spans[0], False)
    points = max(s.size for s in spans) if high > low else 1
    return Grid(np.linspace(low, high, points), True)


def why_no_grid(runs: list[ReportRun]) -> str:
    """Why one env's runs have no common grid (common_grid gave None), in words that fit the case."""
    evaluated = [r for r in runs if r.eval_steps.size]
    if not evaluated:
        return "none of its runs has periodic evaluations (callbacks.eval.freq=0, or a budget below one evaluation)"
    spans = sorted({(int(r.eval_steps[0]), int(r.eval_steps[-1])) for r in evaluated})
    shown = ", ".join(f"{a:,}-{b:,}" for a, b in spans[:4]) + (", ..." if len(spans) > 4 else "")
    return f"its runs evaluated over steps that do not overlap ({shown})"


def on_grid(run: ReportRun, grid: Grid) -> np.ndarray:
    return np.interp(grid.steps, run.eval_steps, run.eval_means)


def score_runs(runs: list[ReportRun], metric: Metric, grids: dict[str, Grid | None]) -> None:
    """Sets each used run's score; a run without what the metric needs is left out, saying why."""
    for run in runs:
        if run.left_out is not None:
            continue
        grid = grids.get(run.env)
        if metric.name == "final":
            run.score = run.record.final_score  # (a number: rlexp.reporting.report_runs checked it)
        elif metric.name == "best":
            run.score = run.record.best_score
            if run.score is None:
                run.left_out = "no periodic evaluation (--metric best needs one)"
        elif run.eval_steps.size == 0:
            run.left_out = f"no periodic evaluation (--metric {metric.name} needs them)"
        elif metric.name == "at":
            step = metric.step
            assert step is not None, "parse_metric gives at: its step"
            if not run.eval_steps[0] <= step <= run.eval_steps[-1]:
                run.left_out = (
                    f"evaluated from step {run.eval_steps[0]:,.0f} to {run.eval_steps[-1]:,.0f}, not at {step:,.0f}"
                )
            else:
                run.score = float(np.interp(step, run.eval_steps, run.eval_means))
        elif grid is None:
            run.left_out = f"the evaluations of {run.env}'s runs span no common steps"
        elif metric.name == "curve":
            run.score = float(on_grid(run, grid)[-1])
        else:  # auc
            values = on_grid(run, grid)
            span = grid.steps[-1] - grid.steps[0]
            run.score = float(trapezoid(values, grid.steps) / span) if span > 0 else float(values[0])
        if run.score is not None and not math.isfinite(run.score):
            run.left_out, run.score = (
                f"its score is {run.score} (a diverged run evaluated with diagnostics=none?)",
                None,
            )
