"""The run's record, summary.json as one typed object: the training run writes it as it goes, and every
command that reads a run reads it through this class (rlexp.rundir.record.read_record), so that a key
cannot be spelled one way by the writer and another by a reader.

summary.json keeps the keys of earlier releases and tells a key not written yet (absent) from one written
as null: readers of runs depend on both (the reference's run-dir page lists them). A run of an earlier
release that lacks a key reads with its default; keys this release does not know, written by a newer one,
are kept when a run is resumed.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from rlexp.errors import Interrupted
from rlexp.rundir.checksums import run_checksums
from rlexp.rundir.contract import (
    ABORTED,
    COMPLETED,
    FAILED,
    INTERRUPTED,
    PRUNED,
    RUNNING,
    read_summary,
    write_summary,
)
from rlexp.rundir.provenance import provenance


class _Absent:
    """A key that summary.json does not hold (yet), as opposed to one it holds as null."""

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT: Final = _Absent()
Score = dict[str, Any]  # mean, std, episodes (and mean_length, n_envs, step, ci95_mean... by kind)


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass
class RunRecord:
    """summary.json, field by field in the order it is written."""

    # what ran, as started
    # (defaults: what a reader takes for a key a summary.json lacks; the writer sets them all)
    status: str = ""  # ("": a summary.json without one)
    algo: str | None = None  # the algo config choice (ppo)
    algo_class: str = ""  # the class that trains (stable_baselines3.PPO, sbx.SAC)
    backend: str = "sb3"
    env: str | None = None  # the env preset (cartpole), None for an id given with env.id only
    env_id: str = ""
    tuned_file: str | None = None
    tuned_env_id: str | None = None
    seed: int | None = None
    torch_threads: int = 0
    n_timesteps: int = 0
    trained_agent: str | None = None
    run_dir: str = ""
    start_time: str = ""
    command: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
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
    target_steps: int | _Absent = ABSENT  # the step count learn() stops at (n_timesteps in whole rollouts)
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
    # RL Zoo's published score for a tuned pair without reference results, beside the run's
    # (rlexp.references.zoo_benchmark): no verdict
    zoo_published: dict[str, Any] | _Absent = ABSENT
    checksums: dict[str, str] | _Absent = ABSENT  # the config's and the agents' files (rlexp.rundir.checksums)
    end_time: str | _Absent = ABSENT
    error: str | _Absent = ABSENT
    resumed: list[dict[str, Any]] | _Absent = ABSENT  # each resumption: its step and time
    # keys of another release's, kept as they were
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def start(
        cls,
        choices: dict[str, Any],
        run_dir: Path,
        *,
        env_id: str,
        tuned_file: str | None,
        tuned_env_id: str | None,
        seed: int,
        n_timesteps: int,
        trained_agent: str | None,
        command: list[str],
        threads: int,
        warnings: list[str],
        algo_class: str,
        sbx: bool,
    ) -> RunRecord:
        """The record of a run that starts now (status running). ``choices``: Hydra's group choices;
        ``env_id``, ``tuned_file``, ``tuned_env_id``, ``seed``, ``n_timesteps``, ``trained_agent``: the
        experiment config's keys of those names (``env.id``); ``algo_class``: the dotted name of the class
        that trains, ``sbx``: whether it is sbx's (rlexp.builders.backends knows both)."""
        return cls(
            status=RUNNING,
            algo=choices.get("algo"),
            algo_class=algo_class,
            backend="sbx" if sbx else "sb3",
            env=choices.get("env"),
            env_id=env_id,
            tuned_file=tuned_file,
            tuned_env_id=tuned_env_id,
            seed=seed,
            torch_threads=threads,
            n_timesteps=n_timesteps,
            trained_agent=trained_agent,
            run_dir=str(run_dir.resolve()),
            start_time=now(),
            command=command,
            warnings=warnings,
            **provenance(sbx),
        )

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunRecord:
        """The record as a summary.json holds it (a key it lacks takes its default)."""
        names = {f.name for f in dataclasses.fields(cls)} - {"extra"}
        known = {k: v for k, v in data.items() if k in names}
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
    def final_score(self) -> float | None:
        """The final evaluation's mean; None before it (or where summary.json holds no number there)."""
        return _mean(self.final_eval)

    @property
    def best_score(self) -> float | None:
        return _mean(self.best_eval)

    @property
    def random_score(self) -> float | None:
        return _mean(self.random_baseline)

    @property
    def steps(self) -> int | None:
        """The steps trained when training ended (or the run stopped); None before."""
        return self.steps_done if isinstance(self.steps_done, int) else None

    @property
    def title(self) -> str:
        return f"{self.algo} on {self.env_id}, seed {self.seed}"

    @property
    def budget(self) -> int:
        """The step count learn() stops at."""
        assert isinstance(self.target_steps, int), "set_budget first"
        return self.target_steps

    def set_budget(self, start_step: int, target_steps: int) -> None:
        """A new run trains from ``start_step`` (a continued agent's own, else 0) to ``target_steps``: its
        n_timesteps in whole rollouts (rlexp.run.budget)."""
        self.start_step, self.target_steps = start_step, target_steps

    def steps_left(self, step: int, n_timesteps: int | None = None) -> int:
        """What learn() is given from ``step``: up to start_step + ``n_timesteps`` (where SB3's schedules count
        their progress to, as in RL Zoo's runs; learn() trains on to the rollout boundary, target_steps), or
        to the budget. A run that had stopped when solved (then a signal cut its final evaluation) trains
        no more; one resumed from an earlier checkpoint (a kill after the stop) trains on, to the stop again."""
        stopped = self.stopped_early_at
        if isinstance(stopped, int) and stopped > step:
            self.stopped_early_at = ABSENT
        elif isinstance(stopped, int):
            return 0
        start = self.start_step if isinstance(self.start_step, int) else 0
        return max((self.budget if n_timesteps is None else start + n_timesteps) - step, 0)

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

    def resume(self, step: int, threads: int, sbx: bool, run_dir: Path) -> None:
        """The run goes on from ``step``, in this process and on this host, in ``run_dir`` (where it is now: a
        run dir copied or moved since it stopped records itself there, not where it was)."""
        self.run_dir = str(run_dir)
        self.error, self.checksums = ABSENT, ABSENT  # (its agents change again)
        self.resumed = [*(self.resumed if isinstance(self.resumed, list) else []), {"step": step, "time": now()}]
        self.status, self.torch_threads = RUNNING, threads
        for key, value in provenance(sbx).items():
            setattr(self, key, value)

    def fail(self, err: BaseException) -> None:
        """The run ended on ``err``: pruned, interrupted (resumable), aborted (a second Ctrl-C) or failed."""
        self.status = failure_status(err)
        self.error = f"{type(err).__name__}: {err}"
        self.end_time = now()

    def complete(self) -> None:
        self.status, self.end_time = COMPLETED, now()
        self.checksums = run_checksums(Path(self.run_dir))


def _mean(score: Any) -> float | None:
    mean = score.get("mean") if isinstance(score, dict) else None
    return float(mean) if isinstance(mean, (int, float)) and not isinstance(mean, bool) else None


def read_record(run_dir: Path, remedy: str = "move the run dir aside or choose another one") -> RunRecord | None:
    """The run's record (None when it has no summary.json); an unreadable one is refused, saying ``remedy``."""
    summary = read_summary(run_dir, remedy)
    return None if summary is None else RunRecord.from_json(summary)


def failure_status(err: BaseException) -> str:
    import optuna  # (only a failing run asks: the readers of runs do without it)

    if isinstance(err, optuna.TrialPruned):
        return PRUNED
    if isinstance(err, Interrupted):
        return INTERRUPTED
    return ABORTED if isinstance(err, KeyboardInterrupt) else FAILED
