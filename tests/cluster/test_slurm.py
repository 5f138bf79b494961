"""rlexp on a real single-node SLURM cluster (tests/infra/slurm.sh): multiruns, searches, preemption."""

from __future__ import annotations

import json
import math
import shlex
import subprocess
import sys
import time

import optuna
import pytest
from conftest import SMALL_SEARCH, rlexp_cli, wait_for_episodes
from optuna.trial import TrialState

from rlexp.search.storage import open_storage

pytestmark = [pytest.mark.xdist_group("slurm"), pytest.mark.usefixtures("slurm_cluster")]

# one CPU per job so that two jobs share this 2-core node; the cluster's default memory
ON_SLURM = ["hydra/launcher=slurm_cpu", "hydra.launcher.cpus_per_task=1", "hydra.launcher.mem_gb=null"]
QUICK = [
    "algo=ppo",
    "env=cartpole",
    "logger=csv",
    "callbacks.eval.n_evaluations=2",
    "callbacks.eval.n_episodes=2",
    "callbacks.eval.final_episodes=2",
]
# a small search whose trials are all pruned at their first report
ALWAYS_PRUNED = [
    "hydra/sweeper/pruner=none",
    "hydra.sweeper.pruner._target_=optuna.pruners.ThresholdPruner",
    "+hydra.sweeper.pruner.lower=1e9",
]
SEARCH = [*SMALL_SEARCH, *ALWAYS_PRUNED]


def _states(job_ids: list[str]) -> dict[str, str]:
    out = subprocess.run(
        ["sacct", "-n", "-X", "-P", "-o", "JobID,State", "-j", ",".join(job_ids)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return dict(line.split("|")[:2] for line in out.splitlines() if line)


def test_seed_multirun_runs_as_slurm_jobs_with_complete_run_dirs(tmp_path):
    """The plain plugin launcher (one CPU per job by SLURM's default), as in the issue's command."""
    args = ["-m", "hydra/launcher=submitit_slurm", "seed=0,1,2", *QUICK, "n_timesteps=2048", "hydra.sweep.dir=sweep"]
    result = rlexp_cli(args, cwd=tmp_path, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    job_ids = []
    for k in range(3):
        run = tmp_path / "sweep" / str(k)
        summary = json.loads((run / "summary.json").read_text())
        assert summary["status"] == "completed" and summary["seed"] == k
        assert summary["steps_done"] >= 2048 and math.isfinite(summary["final_eval"]["mean"])
        assert summary["torch_threads"] == 1
        for name in (
            "model.zip",
            "best/model.zip",
            "config.yaml",
            "command.txt",
            "evaluations.npz",
            ".hydra/config.yaml",
        ):
            assert (run / name).is_file(), name
        assert list((run / "monitor" / "train").glob("*.monitor.csv")) and (run / "logs" / "progress.csv").is_file()
        job_ids.append(summary["slurm_job_id"])
    assert len(set(job_ids)) == 3
    # the submitting process waited for the jobs, then reported on the seeds
    report = json.loads((tmp_path / "sweep" / "report" / "report.json").read_text())
    assert [row["n"] for row in report["groups"]] == [3]
    assert "rlexp: ppo on CartPole-v1: IQM " in result.stdout and "over 3 seeds" in result.stdout
    deadline = time.time() + 60  # sacct lags a few seconds behind the jobs' results
    while set(_states(job_ids).values()) != {"COMPLETED"} and time.time() < deadline:
        time.sleep(0.5)
    assert set(_states(job_ids).values()) == {"COMPLETED"}


def test_search_on_slurm_prunes_from_inside_the_jobs(tmp_path, postgres_url):
    """Trials as SLURM jobs reporting to a PostgreSQL study; the pruner stops them from inside."""
    storage = ["hydra.sweeper.storage=" + postgres_url, "hydra.sweeper.study_name=on-slurm"]
    args = [
        "-m",
        *SEARCH,
        *ON_SLURM,
        *storage,
        "hydra.sweeper.n_jobs=2",
        "hydra.sweeper.n_trials=2",
        "hydra.sweep.dir=sweep",
    ]
    result = rlexp_cli(args, cwd=tmp_path, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    study = optuna.load_study(study_name="on-slurm", storage=postgres_url)
    assert [t.state for t in study.trials] == [TrialState.PRUNED, TrialState.PRUNED]
    assert all(t.intermediate_values == {1: t.intermediate_values[1]} for t in study.trials)
    job_ids = {
        json.loads((tmp_path / "sweep" / f"trial_{k:04d}" / "summary.json").read_text())["slurm_job_id"] for k in (0, 1)
    }
    assert len(job_ids) == 2 and None not in job_ids


def test_sweeper_workers_as_an_sbatch_array_share_one_study(tmp_path):
    """The pattern that scales (README): N sweepers with n_jobs=1, one per array task, one shared study."""
    journal = tmp_path / "study.log"
    rlexp = shlex.join(
        [
            sys.executable,
            "-m",
            "rlexp",
            "-m",
            *SMALL_SEARCH,  # the median pruner
            "hydra.sweeper.n_trials=4",
            "hydra.sweeper.max_total_trials=4",
            f"hydra.sweeper.storage=journal:///{journal}",
            "hydra.sweep.dir=sweep",
        ]
    )
    sbatch = ["sbatch", "--wait", "--array=0-1", "--cpus-per-task=1", f"--chdir={tmp_path}", "--output=worker_%a.out"]
    done = subprocess.run([*sbatch, "--wrap", rlexp], capture_output=True, text=True, timeout=900)
    logs = "\n".join(p.read_text()[-1500:] for p in sorted(tmp_path.glob("worker_*.out")))
    assert done.returncode == 0, done.stderr + logs
    study = optuna.load_study(study_name="ppo-cartpole", storage=open_storage(f"journal:///{journal}"))
    assert sorted(t.number for t in study.trials) == [0, 1, 2, 3]  # max_total_trials, no duplicates
    assert all(t.state in (TrialState.COMPLETE, TrialState.PRUNED) for t in study.trials)
    workers = {
        json.loads((tmp_path / "sweep" / f"trial_{t.number:04d}" / "summary.json").read_text())["slurm_job_id"]
        for t in study.trials
    }
    assert len(workers) == 2  # both array tasks ran trials


@pytest.mark.slow  # about a minute: in CI's slow run
def test_preempted_job_checkpoints_requeues_and_finishes_its_steps(tmp_path):
    """USR2 (what SLURM sends before the time limit, and on preemption with send_user_signal): the job
    checkpoints, submitit requeues it, and the requeued job resumes to the requested total."""
    args = ["-m", *ON_SLURM, "seed=0", *QUICK, "n_timesteps=50000", "hydra.sweep.dir=sweep"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "rlexp", *args],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    run = tmp_path / "sweep" / "0"
    wait_for_episodes(run, 29, proc)
    job_id = json.loads((run / "summary.json").read_text())["slurm_job_id"]
    subprocess.run(["scancel", "--signal=USR2", job_id], check=True)
    # SLURM holds a requeued job for about two minutes (its begin time); start it sooner, but not at
    # once: slurmd revokes a job started while the old attempt is still being cleaned up
    deadline = time.time() + 300
    while (
        subprocess.run(["squeue", "-h", "-j", job_id, "-o", "%T"], capture_output=True, text=True).stdout.strip()
        != "PENDING"
    ):
        assert time.time() < deadline and proc.poll() is None, "the job was not requeued"
        time.sleep(0.2)
    subprocess.run(["scontrol", "update", f"JobId={job_id}", "StartTime=now+10"], check=True)
    out, _ = proc.communicate(timeout=900)
    assert proc.returncode == 0, out[-3000:]
    summary = json.loads((run / "summary.json").read_text())
    assert summary["status"] == "completed"
    assert len(summary["resumed"]) == 1 and 0 < summary["resumed"][0]["step"] < 50000
    assert summary["slurm_job_id"] == job_id  # the same job, requeued
    assert summary["steps_done"] == math.ceil(50000 / 256) * 256  # whole rollouts of 8 envs x 32 steps
    assert not (run / "resume").exists()


@pytest.mark.slow  # 90 s; the requeue test below covers the signal path in the default run
def test_sigterm_stops_the_job_with_a_checkpoint_and_resubmitting_resumes(tmp_path):
    """SIGTERM (SLURM's preemption, or a user's scancel --signal=TERM): no requeue by submitit, so the
    sweep ends with one line saying how to resume; the same command on the same sweep dir finishes it
    and keeps the job that had completed (job 1, a short run)."""
    args = ["-m", *ON_SLURM, "seed=0", *QUICK, "n_timesteps=50000,2048", "hydra.sweep.dir=sweep"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "rlexp", *args], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    run = tmp_path / "sweep" / "0"
    wait_for_episodes(run, 29, proc)
    deadline = time.time() + 300
    short = tmp_path / "sweep" / "1" / "summary.json"
    while not (short.is_file() and json.loads(short.read_text())["status"] == "completed"):
        assert time.time() < deadline and proc.poll() is None, "the short job did not complete"
        time.sleep(0.2)
    short_before = short.read_bytes()
    job_id = json.loads((run / "summary.json").read_text())["slurm_job_id"]
    subprocess.run(["scancel", "--signal=TERM", job_id], check=True)
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 1
    last = err.strip().splitlines()[-1]
    assert (
        last.startswith("rlexp: error: Job ")
        and "FAILED" in last
        and "hydra.sweep.dir=" in last
        and "resumes it" in last
    )
    stopped = json.loads((run / "summary.json").read_text())
    assert stopped["status"] == "interrupted" and (run / "resume" / "model.zip").is_file()

    again = rlexp_cli(args, cwd=tmp_path, timeout=900)
    assert again.returncode == 0, again.stderr[-3000:]
    summary = json.loads((run / "summary.json").read_text())
    assert summary["status"] == "completed" and summary["resumed"][0]["step"] == stopped["steps_done"]
    assert summary["steps_done"] == math.ceil(50000 / 256) * 256
    assert summary["slurm_job_id"] != job_id  # a new job
    assert short.read_bytes() == short_before  # the completed run was kept, not run again
    job_logs = "".join(p.read_text() for p in (tmp_path / "sweep" / ".submitit").glob("*/*_log.out"))
    assert "already holds this run, completed" in job_logs


@pytest.mark.slow  # about a minute: in CI's slow run
def test_a_sweeper_job_cancelled_mid_trial_continues_it_when_submitted_again(tmp_path):
    """A sweeper running as a SLURM job is cancelled (scancel: SIGTERM, then SIGKILL after KillWait) while
    a trial trains: it saves a checkpoint and queues the trial again; the same sbatch submitted again
    continues that trial from the checkpoint (same seed and run dir, no step trained twice) and ends with
    exactly n_trials."""
    journal = tmp_path / "study.log"
    search = [
        "-m",
        *SMALL_SEARCH,
        "n_timesteps=4096",
        "hydra/sweeper/pruner=none",
        "hydra.sweeper.n_trials=3",
        f"hydra.sweeper.storage=journal:///{journal}",
        "hydra.sweep.dir=sweep",
    ]

    def submit(output: str) -> str:
        worker = shlex.join([sys.executable, "-m", "rlexp", *search])
        submitted = subprocess.run(
            [
                "sbatch",
                "--parsable",
                "--cpus-per-task=1",
                f"--chdir={tmp_path}",
                f"--output={output}",
                "--wrap",
                worker,
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        return submitted.stdout.strip().split(";")[0]

    def over(job_id: str) -> None:
        while _states([job_id]).get(job_id, "RUNNING") in ("RUNNING", "PENDING", "COMPLETING"):
            time.sleep(0.2)

    job_id = submit("sweeper.out")
    run = tmp_path / "sweep" / "trial_0001"
    wait_for_episodes(run, 5, log=tmp_path / "sweeper.out")
    subprocess.run(["scancel", job_id], check=True)
    over(job_id)
    # (SLURM lists the job as over at once; without cgroups its process goes on saving, then says so)
    log = tmp_path / "sweeper.out"
    deadline = time.time() + 120
    while "the trial is queued again" not in log.read_text():
        assert time.time() < deadline, log.read_text()[-2000:]
        time.sleep(0.2)
    stopped = json.loads((run / "summary.json").read_text())
    assert stopped["status"] == "interrupted", log.read_text()[-2000:]

    again = submit("again.out")
    over(again)
    said = (tmp_path / "again.out").read_text()
    assert "rlexp: search ppo-cartpole done: 3 trials" in said, said[-3000:]
    assert f"continues the run of trial 1 (trial_0001) from its checkpoint at step {stopped['steps_done']}" in said
    study = optuna.load_study(study_name="ppo-cartpole", storage=open_storage(f"journal:///{journal}"))
    cancelled = study.trials[1]
    assert cancelled.user_attrs.get("rlexp_interrupted") and cancelled.user_attrs["rlexp_owner"].endswith(
        f"@slurm:{job_id}.0"
    )
    counted = [t for t in study.trials if not t.user_attrs.get("rlexp_interrupted")]
    assert len(counted) == 3 and all(t.state == TrialState.COMPLETE for t in counted)
    (continuing,) = [t for t in counted if t.user_attrs.get("requeued_from") == 1]
    assert continuing.params == cancelled.params and continuing.user_attrs["rlexp_run_of"] == 1
    finished = json.loads((run / "summary.json").read_text())
    assert finished["seed"] == stopped["seed"] and finished["resumed"][0]["step"] == stopped["steps_done"]
    assert finished["steps_done"] == stopped["target_steps"] and finished["slurm_job_id"] == again
