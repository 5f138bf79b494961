"""Experiment trackers on real runs, read back by the trackers' own tools: a W&B offline run (`wandb leet
inspect`, wandb's reader of its .wandb log), continued by the resumed run; MLflow runs in a SQLite
store (mlflow.search_runs), two jobs at once on one store."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from conftest import FAST, rlexp_cli, stderr_lines

pytest.importorskip("wandb")
pytest.importorskip("mlflow")


def _wandb_summary(run_file) -> dict:
    result = subprocess.run(
        ["wandb", "leet", "inspect", "--summary", "--json", str(run_file)], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.slow
def test_a_wandb_offline_run_holds_the_config_scalars_and_agent_and_a_resume_continues_it(tmp_path):
    args = [*FAST, "logger=wandb", "env.n_envs=1", "algo.n_steps=64", "algo.batch_size=64", "n_timesteps=4096"]
    args += ["callbacks.eval.freq=1000", "hydra.run.dir=run"]
    env = {**os.environ, "HOME": str(tmp_path)}  # no API key (no ~/.netrc): offline
    env.pop("WANDB_API_KEY", None)
    env.pop("WANDB_MODE", None)
    proc = subprocess.Popen([sys.executable, "-m", "rlexp", *args], cwd=tmp_path, env=env, stderr=subprocess.PIPE)
    try:
        deadline = time.time() + 300
        while not (tmp_path / "run" / "evaluations.npz").is_file() and proc.poll() is None and time.time() < deadline:
            time.sleep(0.1)
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=300)
    finally:
        proc.kill() if proc.poll() is None else None
    assert proc.returncode == 128 + signal.SIGTERM
    stopped = json.loads((tmp_path / "run" / "summary.json").read_text())
    run_id = stopped["trackers"]["wandb"]["id"]
    resumed = rlexp_cli(args, cwd=tmp_path, env=env)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["trackers"]["wandb"]["id"] == run_id and summary["trackers"]["wandb"]["mode"] == "offline"
    logs = sorted((tmp_path / "run" / "wandb").glob("offline-run-*"))
    assert len(logs) == 2 and all(d.name.endswith(run_id) for d in logs)  # one W&B run, in two parts
    first, last = (_wandb_summary(next(d.glob("*.wandb"))) for d in logs)
    assert first["config"]["seed"] == 0 and first["config"]["algo"]["n_steps"] == 64  # the config from the start
    assert last["summary"]["global_step"] == summary["steps_done"] and last["summary"]["status"] == "completed"
    assert last["summary"]["final_eval"]["mean"] == summary["final_eval"]["mean"]
    records = subprocess.run(
        ["wandb", "leet", "inspect", "--json", str(next(logs[-1].glob("*.wandb")))], capture_output=True, text=True
    ).stdout
    assert '"type":"artifact"' in records.replace(" ", "") and "model.zip" in records


@pytest.mark.slow
def test_two_parallel_mlflow_jobs_share_one_new_store(tmp_path):
    import mlflow

    args = ["-m", *FAST, "logger=mlflow", "seed=0,1", "hydra/launcher=local_parallel", "hydra.sweep.dir=sweep"]
    result = rlexp_cli(args, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'mlruns.db'}")
    runs = mlflow.search_runs(experiment_names=["rlexp"])
    assert sorted(runs["tags.seed"]) == ["0", "1"] and set(runs["status"]) == {"FINISHED"}
    assert set(runs["tags.algo"]) == {"PPO"} and set(runs["tags.env"]) == {"CartPole-v1"}
    assert set(runs["params.algo.n_steps"]) == {"32"} and "params.callbacks.eval.freq" in runs
    for job, row in zip(("0", "1"), runs.sort_values("tags.seed").to_dict("records"), strict=True):
        summary = json.loads((tmp_path / "sweep" / job / "summary.json").read_text())
        assert summary["trackers"]["mlflow"]["run_id"] == row["run_id"]
        assert row["metrics.final_eval/mean"] == summary["final_eval"]["mean"]
        client = mlflow.MlflowClient()
        steps = [m.step for m in client.get_metric_history(row["run_id"], "rollout/ep_rew_mean")]
        assert steps == sorted(steps) and steps[-1] == 256
        assert {a.path for a in client.list_artifacts(row["run_id"])} >= {"model.zip", "summary.json"}


@pytest.mark.parametrize("tracker", ["wandb", "mlflow"])
def test_a_missing_tracker_is_refused_naming_its_extra(tracker, tmp_path):
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / f"{tracker}.py").write_text(f"raise ImportError('no module named {tracker}')\n")
    result = rlexp_cli([*FAST, f"logger={tracker}", "hydra.run.dir=run"], cwd=tmp_path, env={"PYTHONPATH": str(shadow)})
    assert result.returncode == 1
    assert stderr_lines(result) == [
        f"rlexp: error: logger={tracker} needs the {tracker} extra ({tracker} is missing): pip install 'rlexp[{tracker}]'"
    ]
    assert not (tmp_path / "run").exists()


def test_wandb_online_without_an_api_key_is_refused(tmp_path):
    env = {"HOME": str(tmp_path), "WANDB_API_KEY": ""}
    result = rlexp_cli(
        [*FAST, "logger.wandb.enabled=true", "logger.wandb.mode=online", "hydra.run.dir=run"], cwd=tmp_path, env=env
    )
    assert stderr_lines(result) == [
        "rlexp: error: logger.wandb.mode=online: no W&B API key is configured (wandb login, or WANDB_API_KEY); leave "
        "the mode unset to log offline"
    ]
    assert result.returncode == 1 and not (tmp_path / "run").exists()


def test_a_tracker_that_cannot_start_is_a_warning_and_the_run_completes(tmp_path):
    down = ["logger=mlflow", "logger.mlflow.tracking_uri=http://127.0.0.1:9", "hydra.run.dir=run"]  # nothing listens
    result = rlexp_cli([*FAST, *down], cwd=tmp_path, env={"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0"})
    assert result.returncode == 0, result.stderr[-2000:]
    assert "logger.mlflow: could not start its run, training goes on without it: MlflowException" in result.stderr
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["status"] == "completed" and summary["trackers"] == {}
