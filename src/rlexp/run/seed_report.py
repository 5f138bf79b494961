"""A seed multirun ends with its report: report/ in the sweep dir, and one line per group and env (the
IQM over the seeds and its CI) printed. Hydra callback (conf/config.yaml, hydra.callbacks.seed_report).

Hydra ends a multirun at the first failed job (1.3 without calling ``on_multirun_end``, 1.4 calling it
with the error in flight); rlexp.cli then calls ``report_after_failure``, so that the seeds that completed are reported and the failed one listed."""

from __future__ import annotations

import logging
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from rlexp.rundir.contract import SUMMARY_FILE

log = logging.getLogger(__name__)
_pending: Path | None = None  # the sweep dir of the multirun under way in this process, not yet reported


def _report(sweep_dir: Path, why: str = "") -> None:
    if not sweep_dir.is_dir() or not any(sweep_dir.glob(f"*/{SUMMARY_FILE}")):
        return  # (every job refused before it wrote a run: the error says it all)
    try:
        from rlexp.reporting.compute import Settings
        from rlexp.reporting.make_report import aggregate_lines, collect, write_report
        from rlexp.reporting.metrics import parse_metric

        settings = Settings(metric=parse_metric("final"))
        runs, grids = collect([sweep_dir], settings.metric)
        cells = Counter((r.group, r.env) for r in runs if r.left_out is None)
        if not cells or max(cells.values()) < 2:  # no condition ran with two seeds: not a seed multirun
            return
        report = write_report(runs, grids, sweep_dir / "report", settings, [sweep_dir])
        lines = aggregate_lines(report)
    except Exception as err:  # the runs are saved: a report that cannot be made is a warning
        log.warning("no report of %s: %s: %s", sweep_dir, type(err).__name__, err)
        return
    for line in lines:
        print(f"rlexp: {line}")
    left = report.counts.left_out
    print(
        f"rlexp: report of the seeds in {sweep_dir / 'report' / 'report.md'}"
        + (f" ({left} run{'s' * (left > 1)} left out)" if left else "")
        + why
    )


def forget() -> None:
    """No multirun under way any more (rlexp.cli, whatever ended the app)."""
    global _pending
    _pending = None


def report_after_failure() -> None:
    """The report of a multirun that a failed job ended (called by rlexp.cli on the way out). Never
    raises, not even on Ctrl-C: the job's error is what the user must see."""
    global _pending
    if _pending is not None:
        sweep_dir, _pending = _pending, None
        try:
            _report(sweep_dir, "; the multirun stopped at a failed job")
        except BaseException as err:  # (KeyboardInterrupt while drawing)
            log.warning("no report of %s: %s", sweep_dir, type(err).__name__)


class SeedReport(Callback):
    """After the last job of a multirun in which some condition ran with two seeds or more; a search's
    trials (each its own hyperparameters) have their own report (search/results)."""

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        global _pending
        searching = "optuna" in str(config.hydra.sweeper.get("_target_", "")).lower()
        _pending = None if searching else Path(str(config.hydra.sweep.dir))

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        global _pending
        if sys.exc_info()[1] is not None:  # Hydra 1.4 calls it as a failed job ends the multirun: rlexp.cli's
            return  # way out decides, as on 1.3 (which does not call it then)
        if _pending is not None:
            sweep_dir, _pending = _pending, None
            _report(sweep_dir)
