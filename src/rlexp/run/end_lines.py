"""The lines the command prints when a run completes, from its record (rlexp.rundir.record)."""

from __future__ import annotations

from pathlib import Path

from rlexp.rundir.record import RunRecord


def run_end_lines(record: RunRecord, run_dir: Path) -> list[str]:
    """What the command prints when a run completes: its reference verdict (or RL Zoo's published score
    beside its own), its warnings and diagnostics, then where it is and how it scored."""
    final, best, baseline = record.final_eval, record.best_eval, record.random_baseline
    assert isinstance(final, dict)
    lines = [f"rlexp: {found['line']}" for found in (record.reference, record.zoo_published) if isinstance(found, dict)]
    if isinstance(record.stopped_early_at, int):
        lines.append(
            f"rlexp: stopped early at step {record.stopped_early_at:,} of {record.budget:,}: an evaluation reached "
            f"{record.stop_reward_threshold} (callbacks.stop)"
        )
    lines += [f"rlexp: warning: {found}" for found in (*record.warnings, *record.diagnostics)]
    lines.append(
        f"rlexp: run saved to {run_dir} | final eval {final['mean']:.2f} +/- {final['std']:.2f} "
        f"over {final['episodes']} episodes"
        + (f", best {best['mean']:.2f}" if isinstance(best, dict) else "")
        + (f", random policy {baseline['mean']:.2f}" if isinstance(baseline, dict) and "mean" in baseline else "")
    )
    return lines
