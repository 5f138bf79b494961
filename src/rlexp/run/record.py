"""The run's record, written to summary.json as the run goes: what ran, where, with what, and how well.

A typed object instead of a dict that the manager changes in many places. summary.json keeps the keys
of earlier releases and tells a key not written yet (absent) from one written as null: readers of runs
depend on both (rlexp.rundir.contract; the reference's run-dir page lists them). Keys this release does
not know, written by a newer one, are kept when a run is resumed.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Final

import optuna
from omegaconf import DictConfig

from rlexp.build.backends import algo_target, is_sbx
from rlexp.errors import Interrupted
from rlexp.rundir.checksums import run_checksums
from rlexp.rundir.contract import ABORTED, COMPLETED, FAILED, INTERRUPTED, PRUNED, RUNNING, write_summary
from rlexp.rundir.provenance import provenance


class _Absent:
    """A key that summary.json does not hold (yet), as opposed to one it holds as null."""

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT: Final = _Absent()
Score = dict[str, Any]  # mean, std, episodes (and mean_length, n_envs, step, ci95_mean... by kind)


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


@dataclass
class RunRecord:
    """summary.json, field by field in the order it is written."""

    # what ran, as started
    status: str
    algo: str | None  # the algo config choice (ppo)
    algo_class: str  # the class that trains (stable_baselines3.PPO, sbx.SAC)
    backend: str
    env: str | None  # the env preset (cartpole), None for an id given with env.id only
    env_id: str
    tuned_file: str | None
    tuned_env_id: str | None
    seed: int
    torch_threads: int
    n_timesteps: int
    trained_agent: str | None
    run_dir: str
    start_time: str
    command: list[str]
    warnings: list[str]
    # where and with what (rlexp.rundir.provenance), renewed on each resume
    versions: dict[str, str | None] = field(default_factory=dict)
    git: dict[str, Any] = field(default_factory=dict)
    host: str = ""
    boot_id: str | None = None
    pid: int = 0
    slurm_job_id: str | None = None
    slurm_restart: int | None = None
    # tracker runs (their ids, to continue them on resume)
    trackers: dict[str, Any] = field(default_factory=dict)
    # once training is set up
    device: str | _Absent = ABSENT
    random_baseline: Score | _Absent | None = ABSENT  # (absent: random_baseline.episodes=0; null: cut short)
    start_step: int | _Absent = ABSENT
    target_steps: int | _Absent = ABSENT  # the step count learn() stops at
    diagnostics: list[str] = field(default_factory=list)
    # once training has ended
    steps_done: int | _Absent = ABSENT
    stop_reward_threshold: float | _Absent = ABSENT  # (written with callbacks.stop)
    stopped_early_at: int | _Absent | None = ABSENT
    train_seconds: float | _Absent = ABSENT
    steps_per_second: float | _Absent = ABSENT
    best_eval: Score | _Absent | None = ABSENT  # null: no periodic evaluation
    final_eval: Score | _Absent = ABSENT
    # where the final eval falls among the reference results of the tuned pair (rlexp.references.verdict)
    reference: dict[str, Any] | _Absent = ABSENT
    checksums: dict[str, str] | _Absent = ABSENT  # the config's and the agents' files (rlexp.rundir.checksums)
    end_time: str | _Absent = ABSENT
    error: str | _Absent = ABSENT
    resumed: list[dict[str, Any]] | _Absent = ABSENT  # each resumption: its step and time
    # keys of another release's, kept as they were
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def start(
        cls,
        cfg: DictConfig,
        choices: dict[str, Any],
        run_dir: Path,
        command: list[str],
        threads: int,
        warnings: list[str],
    ) -> RunRecord:
        """The record of a run that starts now (status running)."""
        return cls(
            status=RUNNING,
            algo=choices.get("algo"),
            algo_class=algo_target(cfg),
            backend="sbx" if is_sbx(cfg) else "sb3",
            env=choices.get("env"),
            env_id=cfg.env.id,
            tuned_file=cfg.tuned_file,
            tuned_env_id=cfg.tuned_env_id,
            seed=cfg.seed,
            torch_threads=threads,
            n_timesteps=cfg.n_timesteps,
            trained_agent=cfg.trained_agent,
            run_dir=str(run_dir.resolve()),
            start_time=now(),
            command=command,
            warnings=warnings,
            **provenance(is_sbx(cfg)),
        )

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunRecord:
        """The record of a run to resume, as its summary.json holds it."""
        names = {f.name for f in dataclasses.fields(cls)} - {"extra"}
        known = {k: v for k, v in data.items() if k in names}
        known.setdefault("status", RUNNING)
        for required in ("algo", "env", "tuned_file", "tuned_env_id", "trained_agent"):
            known.setdefault(required, None)
        known.setdefault("command", [])
        known.setdefault("warnings", [])
        return cls(**known, extra={k: v for k, v in data.items() if k not in names})

    def to_json(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "extra"}
        return {**{k: v for k, v in data.items() if v is not ABSENT}, **self.extra}

    def write(self) -> None:
        write_summary(Path(self.run_dir), self.to_json())

    @property
    def final_mean(self) -> float:
        assert isinstance(self.final_eval, dict), "the run has no final evaluation yet"
        return float(self.final_eval["mean"])

    @property
    def title(self) -> str:
        return f"{self.algo} on {self.env_id}, seed {self.seed}"

    @property
    def budget(self) -> int:
        """The step count learn() stops at."""
        assert isinstance(self.target_steps, int), "set_budget first"
        return self.target_steps

    def set_budget(self, start_step: int, n_timesteps: int, continues_agent: bool) -> None:
        """A new run trains ``n_timesteps`` from ``start_step`` (learn() counts a continued agent's steps on
        from its own; a new agent starts at 0)."""
        self.start_step = start_step
        self.target_steps = start_step * continues_agent + n_timesteps

    def steps_left(self, step: int) -> int:
        """What learn() has left to train from ``step``. A run that had stopped when solved (then a signal
        cut its final evaluation) trains no more; one resumed from an earlier checkpoint (a kill after the
        stop) trains on, to the stop again."""
        stopped = self.stopped_early_at
        if isinstance(stopped, int) and stopped > step:
            self.stopped_early_at = ABSENT
        elif isinstance(stopped, int):
            return 0
        return max(self.budget - step, 0)

    def trained(self, start_step: int, steps_done: int, seconds: float, solved_at: int | None) -> None:
        """learn() ended on its own after ``seconds``: what it did; ``solved_at``: the step it stopped at
        when solved (callbacks.stop), if it did."""
        self.steps_done = steps_done
        self.train_seconds = round(seconds, 2)
        self.steps_per_second = round((steps_done - start_step) / seconds, 1)
        if self.stop_reward_threshold is not ABSENT:
            # (an evaluation at the budget's last step that reaches it stops nothing early)
            early = solved_at if solved_at is not None and solved_at < self.budget else None
            earlier = self.stopped_early_at if isinstance(self.stopped_early_at, int) else None
            self.stopped_early_at = early or earlier

    def resume(self, step: int, threads: int, cfg: DictConfig) -> None:
        """The run goes on from ``step``, in this process and on this host."""
        self.error, self.checksums = ABSENT, ABSENT  # (its agents change again)
        self.resumed = [*(self.resumed if isinstance(self.resumed, list) else []), {"step": step, "time": now()}]
        self.status, self.torch_threads = RUNNING, threads
        for key, value in provenance(is_sbx(cfg)).items():
            setattr(self, key, value)

    def fail(self, err: BaseException) -> None:
        """The run ended on ``err``: pruned, interrupted (resumable), aborted (a second Ctrl-C) or failed."""
        self.status = failure_status(err)
        self.error = f"{type(err).__name__}: {err}"
        self.end_time = now()

    def complete(self) -> None:
        self.status, self.end_time = COMPLETED, now()
        self.checksums = run_checksums(Path(self.run_dir))


def failure_status(err: BaseException) -> str:
    if isinstance(err, optuna.TrialPruned):
        return PRUNED
    if isinstance(err, Interrupted):
        return INTERRUPTED
    return ABORTED if isinstance(err, KeyboardInterrupt) else FAILED


def run_end_lines(record: RunRecord, run_dir: Path) -> list[str]:
    """What the command prints when a run completes: its reference verdict, its warnings and diagnostics, then
    where it is and how it scored."""
    final, best, baseline = record.final_eval, record.best_eval, record.random_baseline
    assert isinstance(final, dict)
    lines = [f"rlexp: {record.reference['line']}"] if isinstance(record.reference, dict) else []
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
