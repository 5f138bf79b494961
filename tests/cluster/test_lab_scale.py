"""One study, eight workers: the sweepers of a SLURM array (the pattern that scales, docs' "running at
scale") sharing a PostgreSQL study on the project's own cluster (tests/infra/slurm.sh, its oversubscribed
``scale`` partition), with a worker SIGKILLed, another requeued and a third cancelled mid-trial."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import optuna
import pytest
from conftest import SMALL_SEARCH
from optuna.trial import TrialState

from rlexp.config.overrides import as_override
from rlexp.search.storage import MAX_CONNECTIONS

pytestmark = [pytest.mark.xdist_group("slurm"), pytest.mark.usefixtures("slurm_cluster"), pytest.mark.slow]
WORKERS, TRIALS = 8, 16
TESTS = Path(__file__).parents[1]  # barrier_callback, cross_worker_pruner: for the workers' processes
SCALE_MD = TESTS.parent / "docs" / "guides" / "scale.md"
SBATCH = ["--partition=scale", "--cpus-per-task=1", "--requeue"]  # as the guide's command gives them


def _squeue(*args: str) -> str:
    return subprocess.run(["squeue", "-h", *args], capture_output=True, text=True, check=True).stdout


def _connections(postgres) -> Counter:
    """Open connections to the study's database, by the worker that holds them (application_name)."""
    rows = postgres.psql("SELECT application_name FROM pg_stat_activity WHERE datname = 'optuna'")
    return Counter(name for name in rows.splitlines() if name.startswith("rlexp "))


def _held_at(gate: Path, sweep: Path, not_jobs: set[str]) -> list[dict]:
    """The summaries of the runs waiting at ``gate`` (their pids there), of SLURM jobs not in ``not_jobs``."""
    pids = {p.name for p in gate.glob("*") if p.name.isdigit()}
    summaries = [json.loads(p.read_text()) for p in sweep.glob("trial_*/summary.json")]
    return [
        s
        for s in summaries
        if str(s["pid"]) in pids and s["status"] == "running" and str(s["slurm_job_id"]) not in not_jobs
    ]


def test_eight_workers_share_one_study_through_a_kill_a_requeue_and_a_cancel(tmp_path, postgres):
    (guide,) = re.findall(r"^sbatch .*", SCALE_MD.read_text(), flags=re.MULTILINE)
    assert all(option in guide.split() for option in SBATCH), guide  # the test runs what the guide says
    gate, midway = tmp_path / "gate", tmp_path / "midway"
    # the password as the guide gives it: in PGPASSWORD, out of the command line
    url = postgres.url.replace(f":{postgres.password}@", "@")
    search = [
        "-m",
        *SMALL_SEARCH,
        "n_timesteps=2048",
        "logger=csv",
        "curves=false",
        "hydra/sweeper/pruner=none",
        "hydra.sweeper.pruner._target_=cross_worker_pruner.BelowAnotherTrial",
        f"hydra.sweeper.storage={url}",
        "hydra.sweeper.study_name=lab",
        f"hydra.sweeper.n_trials={TRIALS}",
        f"hydra.sweeper.max_total_trials={TRIALS}",
        "+callbacks.extra.gate._target_=barrier_callback.Gate",
        as_override("+callbacks.extra.gate.dir", str(gate)),
        "+callbacks.extra.midway._target_=barrier_callback.Gate",
        as_override("+callbacks.extra.midway.dir", str(midway)),
        # between two evaluations (every 512 steps): the pruner cannot end the trial before its stop
        "+callbacks.extra.midway.at_step=768",
        "hydra.sweep.dir=sweep",
    ]
    worker = shlex.join([sys.executable, "-m", "rlexp", *search])
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(TESTS), os.environ.get("PYTHONPATH")])),
        "PGPASSWORD": postgres.password,
    }
    submitted = subprocess.run(
        [
            "sbatch",
            "--parsable",
            f"--array=0-{WORKERS - 1}",
            *SBATCH,
            f"--chdir={tmp_path}",
            "--output=worker_%a_%j.out",
            "--wrap",
            worker,
        ],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    array = submitted.stdout.strip().split(";")[0]

    def logs() -> str:
        return "\n".join(f"{p.name}: {p.read_text()[-1200:]}" for p in sorted(tmp_path.glob("worker_*.out")))

    peak: Counter = Counter()
    sampling = threading.Event()

    def sample() -> None:  # connections held per worker, all along
        while not sampling.is_set():
            for name, count in _connections(postgres).items():
                peak[name] = max(peak[name], count)
            time.sleep(0.2)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        # all eight workers hold a trial at once (the gate keeps each at its training start)
        deadline = time.time() + 600
        while len([p for p in gate.glob("*") if p.name.isdigit()]) < WORKERS:
            assert time.time() < deadline, logs()
            time.sleep(0.2)
        while len(list((tmp_path / "sweep").glob("trial_*/summary.json"))) < WORKERS:
            assert time.time() < deadline, logs()
            time.sleep(0.2)
        summaries = [json.loads(p.read_text()) for p in (tmp_path / "sweep").glob("trial_*/summary.json")]
        assert len({s["slurm_job_id"] for s in summaries}) == WORKERS
        # (not the task whose job id is the array's own: `scontrol requeue ARRAY_ID` requeues every task)
        killed, preempted = [s for s in summaries if str(s["slurm_job_id"]) != array][:2]
        os.kill(int(killed["pid"]), signal.SIGKILL)  # its trial is left RUNNING, its array task FAILED
        subprocess.run(["scontrol", "requeue", preempted["slurm_job_id"]], check=True)
        while _squeue("-j", preempted["slurm_job_id"], "-o", "%T").strip() != "PENDING":
            assert time.time() < deadline, logs()
            time.sleep(0.2)
        # SLURM holds a requeued job for about two minutes (its begin time): sooner, not at once
        subprocess.run(["scontrol", "update", f"JobId={preempted['slurm_job_id']}", "StartTime=now+5"], check=True)
        # its new attempt holds a trial at the gate too before anyone trains (else the others may finish them all)
        while len([p for p in gate.glob("*") if p.name.isdigit()]) < WORKERS + 1:
            assert time.time() < deadline, logs()
            time.sleep(0.2)
        (gate / "open").touch()
        # a third worker cancelled (SIGTERM, SLURM's KillWait, SIGKILL) while its trial is held mid-training
        while not (held := _held_at(midway, tmp_path / "sweep", {killed["slurm_job_id"], preempted["slurm_job_id"]})):
            assert time.time() < deadline, logs()
            time.sleep(0.2)
        cancelled = held[0]
        # as a user names an array task (SLURM refuses an array task's own job id in scancel)
        tasks = dict(line.split() for line in _squeue("-j", array, "-o", "%A %i").splitlines())
        subprocess.run(["scancel", tasks[str(cancelled["slurm_job_id"])]], check=True)
        (midway / "open").touch()
        deadline = time.time() + 900
        while _squeue("-j", array, "-o", "%A"):
            assert time.time() < deadline, logs()
            time.sleep(0.5)
    finally:
        sampling.set()
        subprocess.run(["scancel", array], capture_output=True)
    sampler.join()

    study = optuna.load_study(study_name="lab", storage=postgres.url)
    counted = [
        t for t in study.trials if not t.user_attrs.get("rlexp_interrupted") and not t.user_attrs.get("rlexp_over_cap")
    ]
    assert len(counted) == TRIALS, logs()  # exactly n_trials, no more, the lost ones run again
    table = [
        (t.number, t.state.name, t.user_attrs.get("rlexp_owner"), t.user_attrs.get("requeued_from"))
        for t in study.trials
    ]
    assert all(t.state in (TrialState.COMPLETE, TrialState.PRUNED) for t in counted), table
    numbers = [t.number for t in study.trials]
    assert len(numbers) == len(set(numbers))
    by_number = {t.number: t for t in study.trials}
    runs = {
        t.number: json.loads((tmp_path / t.user_attrs["rlexp_run_dir"] / "summary.json").read_text()) for t in counted
    }
    assert len({r["seed"] for r in runs.values()}) == TRIALS  # no seed twice
    assert all(r["status"] in ("completed", "pruned") for r in runs.values())

    def lost_trial(lost: dict) -> optuna.trial.FrozenTrial:
        """The trial that ran the lost run, in the lost job's first attempt."""
        (trial,) = [
            t
            for t in study.trials
            if t.user_attrs["rlexp_owner"].endswith(f"@slurm:{lost['slurm_job_id']}.0")
            and Path(t.user_attrs["rlexp_run_dir"]) == Path(lost["run_dir"])
        ]
        return trial

    for lost in (killed, preempted, cancelled):  # each lost trial: FAIL, interrupted, its params again
        trial = lost_trial(lost)
        assert trial.state == TrialState.FAIL and trial.user_attrs.get("rlexp_interrupted"), (trial, lost, logs())
        (again,) = [t for t in counted if t.user_attrs.get("requeued_from") == trial.number]
        assert again.params == trial.params
        # it continues the lost trial's run: the same run dir and seed (from its checkpoint, if it saved one)
        assert again.user_attrs["rlexp_run_dir"] == trial.user_attrs["rlexp_run_dir"]
        assert again.user_attrs["rlexp_run_of"] == trial.number
        assert runs[again.number]["seed"] == lost["seed"]
    # the cancelled worker saved a checkpoint on SIGTERM and queued its trial again: it continued from there
    (again,) = [t for t in counted if t.user_attrs.get("requeued_from") == lost_trial(cancelled).number]
    continued = runs[again.number]
    assert continued["resumed"][0]["step"] >= 768, continued  # steps not trained twice
    assert continued["status"] == "pruned" or continued["steps_done"] == continued["target_steps"], continued
    assert "the trial is queued again" in logs()
    # no worker's closing line is stale: the last says the search is done, with the study's best
    closing = [p.read_text().strip().splitlines()[-1] for p in tmp_path.glob("worker_*.out")]
    done = [line for line in closing if " done: " in line]
    assert done and all(f"done: {TRIALS} trials" in line for line in done), closing
    best = study.best_trial
    assert all(f"best {best.value:.6g} (trial {best.number})" in line for line in done), (closing, best.value)
    # the storage's password: in no worker's output and no file of the sweep
    assert postgres.password not in logs()
    assert not [p for p in tmp_path.rglob("*") if p.is_file() and postgres.password.encode() in p.read_bytes()]
    requeued_job = [t for t in counted if t.user_attrs["rlexp_owner"].endswith(f"@slurm:{preempted['slurm_job_id']}.1")]
    assert requeued_job, "the requeued job ran no trial after its restart"
    # pruning inside a worker decided on other workers' reports
    owner_job = {n: t.user_attrs["rlexp_owner"].split("@slurm:")[1].split(".")[0] for n, t in by_number.items()}
    across = [
        t
        for t in counted
        if "pruned_by" in t.user_attrs and owner_job[t.user_attrs["pruned_by"]] != owner_job[t.number]
    ]
    assert across, [t.user_attrs for t in counted]
    # each worker held few connections, whatever the study's size
    assert len(peak) >= WORKERS and max(peak.values()) <= MAX_CONNECTIONS, peak
    print(f"connections per worker: {dict(peak)}")
