"""Learning curves of runs: training episode returns (rolling mean) and periodic evaluations (mean and
its 95% CI) against steps, the random policy's return as a line. Drawn at the end of every run
(RUN/curves.png) and by ``rlexp plot`` for several runs on one figure.

Reads only the run-dir files (monitor/train/*.monitor.csv, evaluations.npz, summary.json,
.hydra/overrides.yaml), so it also draws runs still going or that failed."""

from __future__ import annotations

import csv
import importlib
import logging
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from rlexp.errors import ConfigError
from rlexp.files.atomic import naming_the_path
from rlexp.rundir.contract import (
    CURVES_FILE,
    EVALUATIONS_FILE,
    HYDRA_DIR,
    MONITOR_DIR,
    SUMMARY_FILE,
    TRAIN_EPISODES,
    read_evaluations,
)
from rlexp.rundir.record import RunRecord, read_record
from rlexp.stats.scores import confidence_interval

log = logging.getLogger(__name__)
MAX_WINDOW = 100  # training episodes in the rolling mean, at most (SB3's stats window)
MAX_LABELLED = 10  # runs named in the legend, at most
MAX_LABEL = 60  # characters of a run's name in the legend
CURVE_RESAMPLES = 2_000  # bootstrap resamples per evaluation: a band to see, not a number to report


@dataclass
class Curves:
    """What one run's figure shows; arrays empty when the run has none of it yet."""

    label: str
    train_steps: np.ndarray
    train_returns: np.ndarray
    eval_steps: np.ndarray
    eval_mean: np.ndarray
    eval_ci: np.ndarray  # (evaluations, 2); NaN where one episode gives no interval
    random: dict[str, Any] | None  # summary.json's random_baseline


def _monitor_episodes(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """Returns and lengths of one Monitor file, in the order the episodes ended."""
    with path.open(newline="") as f:
        f.readline()  # '#{"t_start": ..., "env_id": ...}'
        rows = list(csv.DictReader(f))
    return np.array([float(r["r"]) for r in rows]), np.array([int(float(r["l"])) for r in rows])


def training_episodes(
    monitor_dir: Path, start_step: int = 0, steps_done: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Step at which each training episode ended, and its return, over all the run's envs.

    The envs of a vector env step together, so an episode that ends at an env's own step k ends at the
    run's step k x n_envs (an episode cut by a resumption shifts its env's later ones a little). A
    Monitor that counts more steps than the run took (under Atari's frame skip it counts frames) is
    scaled to the run's ``steps_done``."""
    files = sorted(monitor_dir.glob("*.monitor.csv"))
    if not files:
        return np.empty(0), np.empty(0)
    ends, returns = [], []
    for path in files:
        r, lengths = _monitor_episodes(path)
        ends.append(np.cumsum(lengths) * len(files))
        returns.append(r)
    counted = max((int(e[-1]) for e in ends if e.size), default=0)
    scale = 1.0
    if steps_done is not None and counted > 1.1 * (steps_done - start_step) > 0:
        scale = (steps_done - start_step) / counted
    steps = [start_step + e * scale for e in ends]
    order = np.argsort(np.concatenate(steps), kind="stable")
    return np.concatenate(steps)[order], np.concatenate(returns)[order]


def evaluations(run_dir: Path, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Steps, mean returns and 95% bootstrap CIs of the run's periodic evaluations (empty when none yet)."""
    found = read_evaluations(run_dir)
    if found is None:
        return np.empty(0), np.empty(0), np.empty((0, 2))
    steps, results = np.asarray(found.timesteps), np.asarray(found.results, dtype=np.float64)
    ci = [confidence_interval(row, np.mean, seed, CURVE_RESAMPLES) or [np.nan, np.nan] for row in results]
    return steps, results.mean(axis=1), np.asarray(ci, dtype=np.float64).reshape(-1, 2)


def read_curves(run_dir: Path, label: str | None = None) -> Curves:
    """The curves of a run dir (label: its dir name unless given). An unreadable file is left out with a
    warning: a figure of what is there beats none."""
    record = RunRecord()
    try:
        record = read_record(run_dir) or record
    except ConfigError as err:
        log.warning("%s: %s unreadable (%s); no random baseline drawn", run_dir, SUMMARY_FILE, err)
    train_steps, train_returns = np.empty(0), np.empty(0)
    try:
        train_steps, train_returns = training_episodes(
            run_dir / MONITOR_DIR / TRAIN_EPISODES,
            record.start_step if isinstance(record.start_step, int) else 0,
            record.steps,
        )
    except Exception as err:  # a truncated or foreign file: drawn without it (rlexp plot reads any dir)
        log.warning("%s: monitor files unreadable (%s); training episodes left out", run_dir, err)
    eval_steps, eval_mean, eval_ci = np.empty(0), np.empty(0), np.empty((0, 2))
    try:
        eval_steps, eval_mean, eval_ci = evaluations(run_dir, record.seed or 0)
    except Exception as err:  # (np.load: EOFError, BadZipFile, zlib.error, ValueError...)
        log.warning("%s: %s unreadable (%s); evaluations left out", run_dir, EVALUATIONS_FILE, err)
    random = record.random_baseline
    return Curves(
        label or run_dir.name,
        train_steps,
        train_returns,
        eval_steps,
        eval_mean,
        eval_ci,
        random if isinstance(random, dict) and "mean" in random else None,
    )


NO_EVALUATIONS = "no periodic evaluations\n(callbacks.eval.freq=0)"


def rolling_mean(x: np.ndarray, window: int) -> np.ndarray:
    """Mean of the last ``window`` values at each point (fewer at the start)."""
    sums = np.cumsum(np.insert(x, 0, 0.0))
    counts = np.minimum(np.arange(1, x.size + 1), window)
    return (sums[1:] - sums[np.arange(1, x.size + 1) - counts]) / counts


def run_labels(run_dirs: list[Path]) -> list[str]:
    """What tells the runs apart: the overrides (.hydra/overrides.yaml, without hydra.*) not common to
    all of them; a run's dir name when that says nothing."""
    overrides: list[list[str]] = []
    for run_dir in run_dirs:
        try:
            given = yaml.safe_load((run_dir / HYDRA_DIR / "overrides.yaml").read_text()) or []
        except (OSError, yaml.YAMLError):
            given = []
        overrides.append([o for o in given if isinstance(o, str) and not o.lstrip("+~").startswith("hydra.")])
    common = set.intersection(*(set(o) for o in overrides)) if len(overrides) > 1 else set()
    labels = [" ".join(o for o in given if o not in common) for given in overrides]
    if len(set(labels)) < len(labels) or not all(labels):
        return [str(d) if len(run_dirs) > 1 else d.name for d in run_dirs]
    return labels


def _shortened(label: str) -> str:
    return label if len(label) <= MAX_LABEL else label[: MAX_LABEL - 3] + "..."


def draw(curves: list[Curves], path: Path, title: str | None = None) -> Path:
    """Two panels, training and evaluation returns against steps, one colour per run; written to
    ``path`` (its suffix, .png, .pdf or .svg, picks the format), atomically."""
    from matplotlib.figure import Figure  # no pyplot: no global backend or figure state
    from matplotlib.ticker import EngFormatter

    fig = Figure(figsize=(11, 4.2), layout="constrained")
    train_ax, eval_ax = fig.subplots(1, 2, sharey=True)
    palette = [f"C{i % 10}" for i in range(len(curves))]
    for c, color in zip(curves, palette, strict=True):
        # one run: the title says which; over MAX_LABELLED runs (a search's trials) a legend hides the curves
        label = _shortened(c.label) if 1 < len(curves) <= MAX_LABELLED else None
        if c.train_returns.size:
            window = int(np.clip(c.train_returns.size // 10, 1, MAX_WINDOW))
            train_ax.plot(c.train_steps, c.train_returns, ".", color=color, alpha=0.15, markersize=2)
            train_ax.plot(c.train_steps, rolling_mean(c.train_returns, window), color=color, label=label)
        if c.eval_mean.size:
            eval_ax.plot(c.eval_steps, c.eval_mean, "o-", color=color, markersize=3, label=label)
            eval_ax.fill_between(c.eval_steps, c.eval_ci[:, 0], c.eval_ci[:, 1], color=color, alpha=0.2, lw=0)
    baselines = {round(c.random["mean"], 6): c.random for c in curves if c.random is not None}
    for i, random in enumerate(baselines.values()):
        for ax in (train_ax, eval_ax):
            ax.axhline(random["mean"], color="0.4", ls="--", lw=1, label="random policy" if i == 0 else None)
    train_ax.set(title="training episodes (rolling mean)", xlabel="steps", ylabel="episode return")
    eval_ax.set(title="evaluations (mean, 95% CI)", xlabel="steps")
    if not any(c.eval_mean.size for c in curves):  # (runs with callbacks.eval.freq=0): said, not left blank
        eval_ax.set_xlim(train_ax.get_xlim())
        eval_ax.text(0.5, 0.5, NO_EVALUATIONS, transform=eval_ax.transAxes, ha="center", va="center", color="0.4")
    for ax in (train_ax, eval_ax):
        ax.grid(alpha=0.3)
        ax.xaxis.set_major_formatter(EngFormatter(sep=""))  # 100k, not 100000
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize="small", loc="best")
    if title:
        fig.suptitle(title)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial")
    with naming_the_path(path):  # (a dir that is not writable: said of the figure's own name)
        fig.savefig(partial, format=path.suffix.lstrip(".") or "png", dpi=110)
        partial.replace(path)
    return path


def _draw_run(run_dir: Path, title: str) -> str | None:
    """Draws RUN/curves.png; returns why it could not, if it could not."""
    try:
        curves = read_curves(run_dir)
        if curves.train_returns.size or curves.eval_mean.size:  # (a run that failed before any episode: none)
            draw([curves], run_dir / CURVES_FILE, title)
    except Exception as err:  # a figure is a convenience: the run is saved already
        return f"could not draw {run_dir / CURVES_FILE}: {type(err).__name__}: {err}"
    return None


class BackgroundCurves:
    """RUN/curves.png drawn by a child process: it imports matplotlib while the run trains (on another core)
    and draws once told, beside the final evaluation. Importing matplotlib and drawing cost about 0.8 s,
    which every run, and every search trial, would otherwise add to its end.

    The child runs in a session of its own (a Ctrl-C of the run does not print its traceback) and ends
    when the run closes the pipe, whatever way the run ends."""

    def __init__(self, run_dir: Path, title: str) -> None:
        self.run_dir = run_dir
        self._child: subprocess.Popen[str] | None = subprocess.Popen(
            [sys.executable, "-m", __name__, str(run_dir), title],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )

    def draw(self) -> None:
        """Once training has ended: its monitor files and evaluations.npz are complete."""
        if self._child is not None and self._child.stdin is not None:
            try:
                self._child.stdin.write("draw\n")
                self._child.stdin.flush()  # (finish() closes it)
            except OSError:  # the child died: finish() says why
                pass

    def finish(self) -> None:
        """Waits for the figure; what went wrong is a warning, never the run's failure."""
        if self._child is not None:
            said, _ = self._child.communicate()
            self._child = None
            if said.strip():
                log.warning(said.strip())

    def cancel(self) -> None:
        """The run stopped (a signal, a pruned trial): the child ends, nothing half-written is left (a figure
        it finished before stays)."""
        if self._child is not None:
            self._child.kill()
            self._child.communicate()
            self._child = None
        (self.run_dir / f".{CURVES_FILE}.partial").unlink(missing_ok=True)


def _child(run_dir: Path, title: str) -> None:
    """BackgroundCurves' child: matplotlib imported first, then the figure if the run asks for it."""
    for module in ("matplotlib.figure", "matplotlib.ticker"):  # what draw() imports
        importlib.import_module(module)
    if sys.stdin.readline().strip() == "draw":
        print(_draw_run(run_dir, title) or "", end="")


if __name__ == "__main__":
    _child(Path(sys.argv[1]), sys.argv[2])
