"""The run's record (summary.json): written as earlier releases wrote it, read back whole, and the step
arithmetic of budgets, stops when solved and resumptions."""

from __future__ import annotations

import json
from pathlib import Path

import optuna
import pytest

from rlexp.errors import Interrupted
from rlexp.run.budget import true_steps
from rlexp.run.end_lines import run_end_lines
from rlexp.rundir.record import ABSENT, RunRecord, failure_status, read_record

pytestmark = pytest.mark.unit  # pure logic in-process, no training (pytest -m unit)


def _record(**changes) -> RunRecord:
    base = dict(
        status="running",
        algo="ppo",
        algo_class="stable_baselines3.PPO",
        backend="sb3",
        env="cartpole",
        env_id="CartPole-v1",
        tuned_file="ppo_cartpole",
        tuned_env_id="CartPole-v1",
        seed=0,
        torch_threads=1,
        n_timesteps=1000,
        trained_agent=None,
        run_dir="/tmp/run",
        start_time="2026-01-01T00:00:00+00:00",
        command=["rlexp"],
        warnings=[],
    )
    return RunRecord(**{**base, **changes})


def test_keys_not_written_yet_are_absent_and_nulls_stay_null():
    record = _record()
    data = record.to_json()
    assert "final_eval" not in data and "best_eval" not in data and "random_baseline" not in data
    assert data["tuned_file"] == "ppo_cartpole" and data["trained_agent"] is None
    record.best_eval, record.random_baseline = None, None  # no periodic evaluation; a baseline cut short
    data = record.to_json()
    assert data["best_eval"] is None and data["random_baseline"] is None


def test_a_record_read_back_writes_the_same_json_and_keeps_keys_it_does_not_know():
    record = _record(final_eval={"mean": 1.0, "std": 0.0, "episodes": 2}, steps_done=1000)
    data = {**record.to_json(), "added_by_a_newer_release": {"x": 1}}
    again = RunRecord.from_json(json.loads(json.dumps(data)))
    assert again.to_json() == data
    assert again.extra == {"added_by_a_newer_release": {"x": 1}}


def test_a_summary_of_an_earlier_release_without_newer_keys_reads():
    old = {"status": "interrupted", "algo": "ppo", "algo_class": "stable_baselines3.PPO", "backend": "sb3",
           "env_id": "CartPole-v1", "seed": 3, "torch_threads": 1, "n_timesteps": 10, "run_dir": "/r",
           "start_time": "t", "steps_done": 5}  # fmt: skip
    record = RunRecord.from_json(old)
    assert record.env is None and record.command == [] and record.diagnostics == [] and record.steps_done == 5
    assert record.to_json()["status"] == "interrupted"


def test_the_budget_counts_on_from_a_continued_agents_steps():
    fresh, continued = _record(), _record()
    fresh.set_budget(0, true_steps(0, 1000, rollout=None))
    continued.set_budget(5000, true_steps(5000, 1000, rollout=None))
    assert (fresh.budget, continued.budget) == (1000, 6000)
    # whole rollouts: from a continued agent's own step too
    assert (true_steps(0, 1000, 256), true_steps(5000, 1000, 256), true_steps(0, 1024, 256)) == (1024, 6024, 1024)
    assert continued.steps_left(5000) == 1000 and continued.steps_left(5500) == 500
    assert continued.steps_left(7000) == 0  # (past the budget: nothing, never negative)
    # learn() is asked for n_timesteps from the start (its schedules count to that, as RL Zoo's do), and trains
    # on to the rollout boundary, the budget
    whole = _record()
    whole.set_budget(5000, true_steps(5000, 1000, 256))
    assert whole.steps_left(5000, 1000) == 1000 and whole.steps_left(5512, 1000) == 488 and whole.budget == 6024


def test_a_run_stopped_when_solved_trains_no_more_unless_resumed_from_before_the_stop():
    record = _record(stopped_early_at=600)
    record.set_budget(0, 1000)
    assert record.steps_left(600) == 0 and record.stopped_early_at == 600
    assert record.steps_left(400) == 600 and record.stopped_early_at is ABSENT  # a checkpoint before the stop


def test_what_learning_did_goes_in_the_record():
    record = _record(stop_reward_threshold=475.0)
    record.set_budget(0, 1000)
    record.trained(0, 1000, 2.0, solved_at=None)
    assert (record.steps_done, record.train_seconds, record.steps_per_second) == (1000, 2.0, 500.0)
    assert "stopped_early_at" in record.to_json() and record.stopped_early_at is None
    record.trained(0, 600, 1.0, solved_at=600)
    assert record.stopped_early_at == 600
    at_the_end = _record(stop_reward_threshold=475.0)
    at_the_end.set_budget(0, 1000)
    at_the_end.trained(0, 1000, 1.0, solved_at=1000)  # reached at the budget's last step: nothing stopped early
    assert at_the_end.stopped_early_at is None
    without_stop = _record()
    without_stop.set_budget(0, 1000)
    without_stop.trained(0, 1000, 1.0, solved_at=None)
    assert "stopped_early_at" not in without_stop.to_json()


def test_how_a_run_ended_is_its_status():
    assert failure_status(optuna.TrialPruned()) == "pruned"
    assert failure_status(Interrupted(15, 100, None)) == "interrupted"
    assert failure_status(KeyboardInterrupt()) == "aborted"
    assert failure_status(RuntimeError("x")) == "failed"
    record = _record()
    record.fail(RuntimeError("the env broke"))
    assert record.status == "failed" and record.error == "RuntimeError: the env broke"
    record.resume(50, threads=2, sbx=False, run_dir=Path("/elsewhere/run"))
    assert record.status == "running" and "error" not in record.to_json() and record.resumed[0]["step"] == 50
    assert record.run_dir == "/elsewhere/run"  # (a run dir moved since it stopped records itself where it is)


def test_the_last_lines_say_where_the_run_is_and_how_it_scored(tmp_path):
    record = _record(diagnostics=["VALUE: x"], final_eval={"mean": 9.5, "std": 0.5, "episodes": 10})
    record.best_eval, record.random_baseline = {"mean": 10.0}, {"episodes": 10, "endless": 10}  # no mean: none ended
    lines = run_end_lines(record, tmp_path)
    assert lines == [
        "rlexp: warning: VALUE: x",
        f"rlexp: run saved to {tmp_path} | final eval 9.50 +/- 0.50 over 10 episodes, best 10.00",
    ]
    with pytest.raises(AssertionError):
        _ = _record().final_mean


def test_readers_get_typed_scores_and_defaults_for_what_a_summary_lacks(tmp_path):
    assert read_record(tmp_path) is None  # (no summary.json: a run that never started)
    (tmp_path / "summary.json").write_text(
        json.dumps(
            {
                "status": "completed",
                "final_eval": {"mean": 3, "std": 0.0},
                "best_eval": None,
                "random_baseline": {"episodes": 10, "endless": 10},
                "steps_done": 800,
            }
        )
    )
    record = read_record(tmp_path)
    assert (record.final_score, record.best_score, record.random_score, record.steps) == (3.0, None, None, 800)
    assert (record.seed, record.env_id, record.backend, record.algo_class) == (None, "", "sb3", "")
    assert RunRecord(final_eval={"mean": "nan?"}).final_score is None and RunRecord().steps is None
    assert RunRecord().status == ""  # (a summary.json without a status: a report says so)
