"""Who takes over a lost trial, and when: a study's trials judged by their owners and their run dirs."""

from __future__ import annotations

import socket
import subprocess
import sys

import optuna
import pytest
from optuna.trial import TrialState

from rlexp.rundir.contract import LOCK_FILE
from rlexp.search.optuna_private import study_storage, trial_id
from rlexp.search.study import (
    ENV_STORAGE,
    ENV_STUDY,
    ENV_TRIAL,
    INTERRUPTED_ATTR,
    OWNER_ATTR,
    REQUEUED_FROM_ATTR,
    RUN_DIR_ATTR,
    hand_over,
    job_trial,
    jobs_reach,
    reclaim_interrupted_trials,
)

pytestmark = pytest.mark.unit  # pure logic in-process, no training (pytest -m unit)

HOLD = """
import fcntl, os, sys

fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.read()
"""


def _gone_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _lost_trial(tmp_path):
    """A study with one RUNNING trial whose owner (a process of this host) has exited."""
    study = optuna.create_study(storage=f"sqlite:///{tmp_path / 'study.db'}", study_name="s")
    trial = study.ask({"x": optuna.distributions.FloatDistribution(0, 1)})
    run_dir = tmp_path / "trial_0000"
    run_dir.mkdir()
    trial.set_user_attr(OWNER_ATTR, f"{socket.gethostname()}:{_gone_pid()}")
    trial.set_user_attr(RUN_DIR_ATTR, str(run_dir))
    return study, run_dir


def test_a_lost_trial_whose_run_still_holds_its_dir_is_left_to_it_until_it_lets_go(tmp_path):
    """A cancelled SLURM job is listed as over while its run saves its checkpoint: its owner looks gone,
    its run dir's lock says otherwise; the trial is taken over only once the lock is free."""
    study, run_dir = _lost_trial(tmp_path)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(run_dir / LOCK_FILE)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline() == "held\n"
        assert reclaim_interrupted_trials(study) == 0
        assert not hand_over(study, study.trials[0], 100)
        assert study.trials[0].state == TrialState.RUNNING
    finally:
        holder.stdin.close()
        holder.wait()
    assert reclaim_interrupted_trials(study) == 1
    lost, queued = study.trials
    assert lost.state == TrialState.FAIL and lost.user_attrs[INTERRUPTED_ATTR]
    assert queued.state == TrialState.WAITING and queued.user_attrs[REQUEUED_FROM_ATTR] == 0
    assert reclaim_interrupted_trials(study) == 0  # once


def test_a_trial_handed_over_by_its_stopped_run_is_queued_once(tmp_path):
    study, _ = _lost_trial(tmp_path)
    assert hand_over(study, study.trials[0], 4224)
    assert not hand_over(study, study.trials[0], 4224)  # (a second worker, or the reclaim, comes too late)
    assert reclaim_interrupted_trials(study) == 0
    assert [t.state for t in study.trials] == [TrialState.FAIL, TrialState.WAITING]
    assert study.trials[0].user_attrs["fail_reason"].startswith("interrupted: stopped by a signal at step 4224")


def test_a_job_in_its_sweepers_process_reaches_its_trial_through_the_sweepers_storage(tmp_path, monkeypatch):
    """Hydra's basic launcher runs a trial's job in the sweeper's process: the job reports to its trial
    through the storage the sweeper opened, not one it opens again (an engine, a schema check, each trial);
    a job elsewhere, or after the sweep, opens its own."""
    url = f"sqlite:///{tmp_path / 'study.db'}"
    study = optuna.create_study(storage=url, study_name="s")
    trial = study.ask({"x": optuna.distributions.FloatDistribution(0, 1)})
    for name, value in ((ENV_STORAGE, url), (ENV_STUDY, "s"), (ENV_TRIAL, str(trial_id(trial)))):
        monkeypatch.setenv(name, value)
    with jobs_reach(url, study):
        job = job_trial()
        assert job is not None and study_storage(job.study) is study_storage(study)
        job.report(0.5, 1)
    assert study.trials[0].intermediate_values == {1: 0.5}
    alone = job_trial()
    assert alone is not None and alone.number == trial.number
    assert study_storage(alone.study) is not study_storage(study)
