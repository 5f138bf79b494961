"""A search keeps n_jobs trials running (steady, the default): a trial's slot gets the next trial as soon as it
ends; hydra.sweeper.mode=batch runs n_jobs at a time, repeatable for a seed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import optuna
import pytest
from background import ended
from conftest import SMALL_SEARCH, rlexp_cli, wait_for_episodes
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


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"  # (a zombie has ended)


@pytest.mark.slow  # a parallel search stopped and run again: in CI's slow run
def test_sigterm_to_the_sweeper_alone_stops_its_jobs_and_the_same_command_finishes_them(tmp_path):
    """local_parallel's jobs are the sweeper's to stop: SIGTERM to its process alone (not its group) reaches
    the running trials' jobs, which checkpoint and end before it does; their trials run again, continued
    from those checkpoints, when the same command runs again."""
    search = [*PARALLEL, "n_timesteps=8192", "hydra.sweeper.n_trials=2", "hydra.sweep.dir=sweep"]
    proc = subprocess.Popen([sys.executable, "-m", "rlexp", *search], cwd=tmp_path, env={**os.environ, **_env()})
    with ended(proc):
        runs = [tmp_path / "sweep" / f"trial_{k:04d}" for k in (0, 1)]
        for run in runs:
            wait_for_episodes(run, 3, proc)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=300) == 128 + signal.SIGTERM
    stopped = [json.loads((run / "summary.json").read_text()) for run in runs]
    assert [s["status"] for s in stopped] == ["interrupted"] * 2
    assert not any(_alive(s["pid"]) for s in stopped)  # (no job left running on its own)
    again = rlexp_cli(search, cwd=tmp_path, env=_env(), timeout=900)
    assert again.returncode == 0, again.stderr[-3000:]
    for run, before in zip(runs, stopped, strict=True):
        after = json.loads((run / "summary.json").read_text())
        assert after["status"] == "completed" and after["resumed"][0]["step"] == before["steps_done"]


@pytest.mark.slow  # parallel runs, one killed: in CI's slow run
def test_a_job_killed_mid_run_fails_alone_in_one_line(tmp_path):
    """SIGKILL to one of local_parallel's jobs: the others complete; the command ends in one line naming
    the job and where its output is."""
    args = ["-m", "hydra/launcher=local_parallel", "seed=0,1", "n_timesteps=8192", "hydra.sweep.dir=sweep"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "rlexp", *args],
        cwd=tmp_path,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    with ended(proc):
        wait_for_episodes(tmp_path / "sweep" / "0", 3, proc)
        os.kill(json.loads((tmp_path / "sweep" / "0" / "summary.json").read_text())["pid"], signal.SIGKILL)
        _, err = proc.communicate(timeout=600)
    assert proc.returncode == 1, err[-3000:]
    last = err.strip().splitlines()[-1]
    assert last.startswith("rlexp: error: job #0 ended without a result (exit code -9); its output: "), last
    assert "hydra.sweep.dir=" in last  # (how to resume it)
    assert json.loads((tmp_path / "sweep" / "1" / "summary.json").read_text())["status"] == "completed"
