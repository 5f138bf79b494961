"""A search keeps n_jobs trials running (steady, the default): a trial's slot gets the next trial as soon as it
ends; hydra.sweeper.mode=batch runs n_jobs at a time, repeatable for a seed."""

from __future__ import annotations

import os
from pathlib import Path

import optuna
import pytest
from conftest import SMALL_SEARCH, rlexp_cli
from optuna.trial import TrialState

from rlexp.config.overrides import as_override

TESTS = str(Path(__file__).parents[1])  # barrier_callback, for the jobs' processes
PARALLEL = ["-m", *SMALL_SEARCH, "hydra/launcher=local_parallel", "hydra.sweeper.n_jobs=2", "hydra/sweeper/pruner=none"]


def _env() -> dict[str, str]:
    return {"PYTHONPATH": os.pathsep.join(filter(None, [TESTS, os.environ.get("PYTHONPATH")]))}


def _trials(sweep: Path) -> list[optuna.trial.FrozenTrial]:
    return optuna.load_study(study_name="ppo-cartpole", storage=f"sqlite:///{sweep / 'study.db'}").trials


def test_a_slot_is_refilled_as_soon_as_its_trial_ends(tmp_path):
    """The first trial waits at its training start until a third trial has started: with two slots, that
    happens only if the second trial's slot takes the third while the first still runs."""
    relay = [
        "+callbacks.extra.relay._target_=barrier_callback.FirstWaits",
        as_override("+callbacks.extra.relay.dir", str(tmp_path / "started")),
        "+callbacks.extra.relay.parties=3",
    ]
    args = [*PARALLEL, "hydra.sweeper.n_trials=3", *relay, "hydra.sweep.dir=sweep"]
    result = rlexp_cli(args, cwd=tmp_path, env=_env(), timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    trials = _trials(tmp_path / "sweep")
    assert [t.state for t in trials] == [TrialState.COMPLETE] * 3
    last = max(trials, key=lambda t: t.datetime_start)  # (asked when a slot came free)
    assert any(t.datetime_complete > last.datetime_start for t in trials if t is not last)  # (one still ran)


@pytest.mark.slow  # two searches of parallel jobs, about a minute: in CI's slow run
def test_batches_propose_the_same_trials_in_the_same_order_for_a_seed(tmp_path):
    sampled = []
    for sweep in ("a", "b"):
        args = [*PARALLEL, "hydra.sweeper.mode=batch", "hydra.sweeper.n_trials=4", f"hydra.sweep.dir={sweep}"]
        result = rlexp_cli(args, cwd=tmp_path, env=_env(), timeout=600)
        assert result.returncode == 0, result.stderr[-3000:]
        sampled.append([(t.number, t.params) for t in _trials(tmp_path / sweep)])
    assert sampled[0] == sampled[1] and len(sampled[0]) == 4


def test_a_mode_that_is_none_is_refused_in_one_line(tmp_path):
    result = rlexp_cli([*PARALLEL, "hydra.sweeper.mode=stedy", "hydra.sweep.dir=sweep"], cwd=tmp_path)
    assert result.returncode == 1
    assert "hydra.sweeper.mode=stedy" in result.stderr and "steady" in result.stderr, result.stderr
    assert not (tmp_path / "sweep").exists()


def test_past_the_failure_rate_the_running_trials_end_before_the_search(tmp_path):
    """Every trial fails (its front door refuses 0 steps per episode): the steady search asks no more once past
    the failure rate, and ends, in one line, only when no trial of it is still running."""
    broken = ["env.max_episode_steps=choice(0)", "hydra.sweeper.n_trials=8", "hydra.sweep.dir=sweep"]
    result = rlexp_cli([*PARALLEL, *broken], cwd=tmp_path, env=_env(), timeout=600)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1].startswith("rlexp: error: ")
    assert "trials failed, above hydra.sweeper.max_failure_rate" in result.stderr
    trials = _trials(tmp_path / "sweep")
    assert 4 <= len(trials) < 8 and all(t.state == TrialState.FAIL for t in trials)
