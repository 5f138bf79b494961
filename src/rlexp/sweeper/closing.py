"""How a search ended, in the one line the sweeper prints last."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import optuna
from optuna.trial import TrialState

from rlexp.search.study import counted_trials, finished_trials


def closing_line(study: optuna.Study, results: dict[str, Any], sweep_dir: Path) -> str:
    """Trials by state, the best value and where its params are; or, while other workers of a shared study
    still run trials, what this worker saw as it ended."""
    done = finished_trials(study)
    counts = {state: sum(t.state == state for t in done) for state in (TrialState.COMPLETE, TrialState.PRUNED)}
    failed = len(done) - sum(counts.values())
    tally = f"{counts[TrialState.COMPLETE]} completed, {counts[TrialState.PRUNED]} pruned, {failed} failed"
    best = results.get("best")
    where = results.get("tuned_file") or str(sweep_dir / "optimization_results.yaml")
    going = sum(t.state in (TrialState.RUNNING, TrialState.WAITING) for t in counted_trials(study))
    if going:
        so_far = f"best so far {best['value']:.6g} (trial {best['trial']})" if best else "none completed yet"
        return (
            f"rlexp: search {study.study_name}: this worker is done, {going} trial{'s' * (going > 1)} still "
            f"running or queued in other workers; {len(done)} finished so far ({tally}); {so_far}; the last "
            f"worker to end writes the final results (params: {where})"
        )
    line = f"rlexp: search {study.study_name} done: {len(done)} trials ({tally})"
    if best is None:
        return line + f"; no trial completed; see {sweep_dir / 'trials.csv'}"
    return line + f"; best {best['value']:.6g} (trial {best['trial']}); params: {where}"


def best_value(study: optuna.Study) -> float | None:
    """(By value: trials tied for the best are equally the best, whichever one a storage returns.)"""
    complete = [t for t in study.get_trials(deepcopy=False) if t.state == TrialState.COMPLETE]
    return study.best_value if complete else None
