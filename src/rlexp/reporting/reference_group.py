"""The reference results as one more group of a report (``rlexp report --reference``): each group's runs
compared with the reference of their tuned file on their env, its seeds scored as runs are. A group of a
tuned pair without reference results gets RL Zoo's published score instead, shown and not compared."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import numpy as np

from rlexp.errors import ConfigError
from rlexp.references.files import MIN_SEEDS, Reference, load_reference, reference_path
from rlexp.references.zoo_benchmark import beside_reference
from rlexp.reporting.metrics import Metric
from rlexp.reporting.report_runs import ReportRun, flat_config
from rlexp.rundir.contract import COMPLETED
from rlexp.rundir.record import RunRecord


def reference_group(name: str) -> str:
    return f"reference {name}"


def _budgets(runs: list[ReportRun]) -> set[int]:
    """The budgets the runs were given (n_timesteps; PPO's last rollout may take them a little past it)."""
    return {int(r.flat.get("n_timesteps") or r.record.steps or 0) for r in runs}


def _comparable(reference: Reference, runs: list[ReportRun], metric: Metric) -> str | None:
    """Why the runs of one group and env cannot be compared with their reference (None: they can)."""
    if metric.name == "final":
        budgets = _budgets(runs)
        if budgets != {reference.n_timesteps}:
            steps = ", ".join(f"{t:,}" for t in sorted(budgets))
            return (
                f"trained {steps} steps and the reference {reference.name} {reference.n_timesteps:,}: compare them "
                "at a step both evaluated with --metric at:STEP"
            )
        short = [r for r in runs if (r.record.steps or reference.n_timesteps) < reference.n_timesteps]
        if short:
            return (
                f"{len(short)} of its runs stopped before the budget (callbacks.stop?): compare them at a step "
                "all evaluated with --metric at:STEP"
            )
        return None
    if reference.curve_steps.size == 0 or not reference.curve_steps[0] <= metric.step <= reference.curve_steps[-1]:
        span = (
            f"from step {reference.curve_steps[0]:,} to {reference.curve_steps[-1]:,}"
            if reference.curve_steps.size
            else "at no step"
        )
        return f"the reference {reference.name} evaluated {span}, not at {metric.step:,.0f}"
    return None


def reference_runs(
    runs: list[ReportRun], metric: Metric
) -> tuple[list[ReportRun], list[tuple[str, str, str]], list[str], list[dict[str, Any]]]:
    """The reference of each group's tuned file on its env, as runs of one more group each ("reference
    <tuned file>": its seeds' final evaluations and curves, scored by the report as any run), which groups
    are compared with which, and a line for each group and env that has nothing to be compared with; for a
    group of a tuned pair without a reference, RL Zoo's published score (rlexp.references.zoo_benchmark),
    whose line is its note.

    Only ``--metric final`` (at the reference's budget) and ``at:STEP`` (a step on its curve) are what a
    reference records. Nothing to show at all is a one-line error."""
    if metric.name not in ("final", "at"):
        raise ConfigError(
            f"--reference with --metric {metric.text()}: a reference records final evaluations and learning "
            "curves; compare with --metric final or at:STEP"
        )
    cells: dict[tuple[str, str], list[ReportRun]] = {}
    for run in runs:
        if run.left_out is None:
            cells.setdefault((run.group, run.env), []).append(run)
    added: dict[str, list[ReportRun]] = {}
    pairs: list[tuple[str, str, str]] = []
    notes: list[str] = []
    published: list[dict[str, Any]] = []
    for (group, env), cell in cells.items():
        tuned = {str(r.flat.get("tuned_file") or "") for r in cell}
        name = tuned.pop() if len(tuned) == 1 else ""
        reference = load_reference(name) if name else None
        if reference is None or reference.env_id != env:
            what = f"tuned file {name}" if name else "no tuned file" if not tuned else "several tuned files"
            algos = {r.algo for r in cell}
            score = beside_reference(algos.pop(), env, name) if len(algos) == 1 else None
            if score is None:
                notes.append(f"{group} on {env}: no reference ({what}; rlexp list shows the pairs that have one)")
                continue
            notes.append(f"{group} on {env}: {score.text()} (no rlexp reference: shown, not compared)")
            published.append({"group": group, "env": env, **asdict(score), "line": notes[-1]})
            continue
        why = _comparable(reference, cell, metric)
        if why is None and reference.finals.size < MIN_SEEDS:
            why = f"the reference {name} has {reference.finals.size} seeds, too few (at least {MIN_SEEDS})"
        if why is not None:
            notes.append(f"{group} on {env}: {why}")
            continue
        pairs.append((group, env, reference_group(name)))
        if name not in added:
            added[name] = [_as_run(reference, i) for i in range(reference.finals.size)]
    if not pairs and not published:
        raise ConfigError(
            "--reference: nothing to compare: " + "; ".join(notes[:3]) + ("; ..." if len(notes) > 3 else "")
        )
    return [run for found in added.values() for run in found], pairs, notes, published


def _as_run(reference: Reference, i: int) -> ReportRun:
    """Reference seed ``i`` as a completed run of the reference's group."""
    record = RunRecord(
        status=COMPLETED,
        env_id=reference.env_id,
        algo=reference.name.split("_", 1)[0],
        seed=int(reference.seeds[i]) if i < len(reference.seeds) and reference.seeds[i].isdigit() else i,
        final_eval={"mean": float(reference.finals[i])},
        steps_done=reference.n_timesteps,
    )
    return ReportRun(
        dir=reference.path or reference_path(reference.name),
        record=record,
        flat=flat_config(reference.config),
        group=reference_group(reference.name),
        eval_steps=reference.curve_steps.astype(np.float64),
        eval_means=reference.curves[i],
    )
