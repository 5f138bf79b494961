"""The run directory contract: complete, reproducible, loadable by plain SB3, resumable, atomic."""

from __future__ import annotations

import csv
import json
import os
import pickle
import shutil
import signal
import subprocess
import sys
import time
import zipfile

import numpy as np
import pytest
from conftest import FAST, rlexp_cli, stderr_lines, train

from rlexp.errors import ConfigError


def test_run_dir_is_complete(tmp_path):
    # 3 rollouts of 8 envs x 32 steps; checkpoints at the rollout boundaries past each 256 steps, and at the end
    summary = train([*FAST, "n_timesteps=768", "logger=default", "callbacks.checkpoint.freq=256"], tmp_path)
    for name in ["model.zip", "best/model.zip", "evaluations.npz", "config.yaml", "command.txt", "summary.json"]:
        assert (tmp_path / name).is_file(), name
    assert list((tmp_path / "monitor" / "train").glob("*.monitor.csv"))
    assert list((tmp_path / "monitor" / "eval").glob("*.monitor.csv"))
    assert list((tmp_path / "logs").glob("events.out.tfevents.*"))
    assert (tmp_path / "logs" / "progress.csv").is_file()
    assert sorted(p.name for p in (tmp_path / "checkpoints").iterdir()) == [
        "step_000000000256",
        "step_000000000512",
        "step_000000000768",
    ]
    assert "tuned_file: ppo_cartpole" in (tmp_path / "config.yaml").read_text()
    assert "n_timesteps: 768" in (tmp_path / "config.yaml").read_text()  # after overrides
    assert summary["status"] == "completed"
    assert summary["tuned_file"] == "ppo_cartpole"
    assert (summary["algo"], summary["env"], summary["env_id"], summary["seed"]) == (
        "ppo",
        "cartpole",
        "CartPole-v1",
        0,
    )
    assert summary["steps_done"] == 768
    for key in ["python", "torch", "stable-baselines3", "gymnasium", "rlexp"]:
        assert summary["versions"][key]
    for key in ["host", "start_time", "end_time", "git", "final_eval", "best_eval"]:
        assert key in summary
    assert set(summary["final_eval"]) >= {"mean", "std", "episodes"}
    assert set(summary["best_eval"]) >= {"mean", "std", "step"}
    baseline = summary["random_baseline"]  # 10 random episodes of the eval env, seeded as the final evaluation
    assert baseline["episodes"] == 10 and baseline["ci95_mean"][0] <= baseline["mean"] <= baseline["ci95_mean"][1]
    assert 8 < baseline["mean"] < 50  # random CartPole lasts about 22 steps


def test_no_tuned_file_is_recorded_as_none(tmp_path):
    summary = train([*FAST, "algo=a2c", "env=pendulum"], tmp_path)
    assert summary["tuned_file"] == "a2c_pendulum"
    summary = train([*FAST, "~tuned"], tmp_path / "plain")
    assert summary["tuned_file"] is None


def _evaluations(run_dir):
    return np.load(run_dir / "evaluations.npz")["results"]


def test_same_config_and_seed_give_identical_results(tmp_path):
    overrides = [*FAST, "algo=sac", "env=pendulum", "algo.learning_starts=192", "env.normalize=true"]
    first = train(overrides, tmp_path / "a")
    second = train(overrides, tmp_path / "b")
    other_seed = train([*overrides, "seed=1"], tmp_path / "c")
    assert first["final_eval"] == second["final_eval"]
    np.testing.assert_array_equal(_evaluations(tmp_path / "a"), _evaluations(tmp_path / "b"))
    assert other_seed["final_eval"]["mean"] != first["final_eval"]["mean"]


def test_plain_sb3_load_reproduces_the_recorded_score(tmp_path):
    """The final score, re-evaluated by a plain SB3 script as README shows, after periodic evaluations."""
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.evaluation import evaluate_policy
    from stable_baselines3.common.vec_env import VecNormalize

    summary = train(
        [
            "env=pendulum",
            "algo=ppo",
            "env.normalize=true",
            "n_timesteps=2048",
            "callbacks.eval.freq=512",
            "logger=csv",
            "callbacks.eval.final_episodes=5",
            "seed=3",
        ],
        tmp_path,
    )
    assert summary["best_eval"] is not None  # periodic evaluations did use the eval env
    assert summary["final_eval"]["n_envs"] == 5  # one env per episode, side by side
    env = VecNormalize.load(str(tmp_path / "vecnormalize.pkl"), make_vec_env("Pendulum-v1", n_envs=5, seed=10_003))
    env.training, env.norm_reward = False, False
    model = PPO.load(tmp_path / "model.zip")  # load(env=env) would reseed env with the training seed
    mean, std = evaluate_policy(model, env, n_eval_episodes=5, deterministic=True)
    assert (mean, std) == (summary["final_eval"]["mean"], summary["final_eval"]["std"])  # exactly


def _obs_count(run_dir) -> float:
    with open(run_dir / "vecnormalize.pkl", "rb") as f:
        return pickle.load(f).obs_rms.count


@pytest.mark.parametrize(
    ("algo", "env", "extra"),
    [
        (
            "ppo",
            "pendulum",
            ["env.normalize=true", "algo.n_steps=128", "algo.batch_size=64", "callbacks.checkpoint.freq=96"],
        ),
        (
            "sac",
            "pendulum",
            ["env.normalize=true", "algo.learning_starts=64", "callbacks.checkpoint.save_replay_buffer=true"],
        ),
    ],
)
def test_continue_training_keeps_counter_statistics_and_buffer(algo, env, extra, tmp_path):
    first = train([*FAST, f"algo={algo}", f"env={env}", "~tuned", *extra], tmp_path / "first")
    stats_before = _obs_count(tmp_path / "first")
    second = train(
        [*FAST, f"algo={algo}", f"env={env}", "~tuned", *extra, f"trained_agent={tmp_path / 'first'}"],
        tmp_path / "second",
    )
    assert second["start_step"] == first["steps_done"]
    assert second["steps_done"] == first["steps_done"] + 256
    stats_after = _obs_count(tmp_path / "second")
    assert stats_after > stats_before + 255  # statistics continued, not restarted
    if algo == "ppo":  # the schedule goes on (next at 288) at rollout boundaries (every 128): 384, and the end
        assert [p.name for p in sorted((tmp_path / "second" / "checkpoints").iterdir())] == [
            "step_000000000384",
            "step_000000000512",
        ]
    if algo == "sac":
        from stable_baselines3 import SAC

        model = SAC.load(tmp_path / "second" / "model.zip")
        model.load_replay_buffer(tmp_path / "second" / "replay_buffer.pkl")
        assert model.replay_buffer.size() == 512  # the first run's transitions were kept


def test_continue_from_a_zip_file(tmp_path):
    train(FAST, tmp_path / "first")
    first = json.loads((tmp_path / "first" / "summary.json").read_text())
    summary = train([*FAST, f"trained_agent={tmp_path / 'first' / 'best' / 'model.zip'}"], tmp_path / "second")
    assert summary["start_step"] == first["best_eval"]["step"]


def test_trained_agent_of_another_algorithm_is_refused(tmp_path):
    train(FAST, tmp_path / "ppo")
    with pytest.raises(ConfigError, match=r"holds a stable_baselines3\.PPO agent, not algo=stable_baselines3\.A2C"):
        train([*FAST, "algo=a2c", f"trained_agent={tmp_path / 'ppo'}"], tmp_path / "a2c")
    bare = tmp_path / "elsewhere" / "agent.zip"  # no summary.json beside it
    bare.parent.mkdir()
    shutil.copy(tmp_path / "ppo" / "model.zip", bare)
    with pytest.raises(ConfigError, match="cannot be loaded as DQN"):
        train([*FAST, "algo=dqn", f"trained_agent={bare}"], tmp_path / "dqn")
    not_a_zip = tmp_path / "elsewhere" / "notes.zip"
    not_a_zip.write_text("hello")
    with pytest.raises(ConfigError, match=r"not an SB3 model \.zip"):
        train([*FAST, f"trained_agent={not_a_zip}"], tmp_path / "x")


def test_atomic_write_keeps_the_old_file_when_the_writer_dies(tmp_path):
    from rlexp.files.atomic import atomic_write

    dest = tmp_path / "model.zip"
    dest.write_bytes(b"good")

    def crash(tmp):
        tmp.write_bytes(b"half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        atomic_write(dest, crash)
    assert dest.read_bytes() == b"good"
    assert [p.name for p in tmp_path.iterdir()] == ["model.zip"]


def test_killed_run_leaves_only_whole_files(tmp_path):
    """SIGKILL a run that saves often: every model and summary on disk is still whole."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rlexp",
            "n_timesteps=1000000",
            "logger=csv",
            "callbacks.eval.freq=256",
            "callbacks.eval.n_episodes=1",
            "callbacks.checkpoint.freq=256",
            "hydra.run.dir=run",
        ],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.time() + 120
    while time.time() < deadline and len(list((tmp_path / "run").glob("checkpoints/step_*"))) < 3:
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    models = list((tmp_path / "run").rglob("model.zip"))
    assert len(models) >= 3
    for model in models:
        assert zipfile.ZipFile(model).testzip() is None
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["status"] == "running"


def test_an_existing_run_dir_is_never_overwritten(tmp_path):
    train(FAST, tmp_path)
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    with pytest.raises(ConfigError, match="already holds a run"):
        train([*FAST, "seed=1"], tmp_path)
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before


def test_replacing_an_agent_dir_leaves_no_gap_and_no_leftovers(tmp_path):
    from stable_baselines3 import PPO

    from rlexp.rundir.agents import save_agent_dir

    model = PPO("MlpPolicy", "CartPole-v1", n_steps=64, batch_size=64)
    save_agent_dir(model, tmp_path / "best")
    first = (tmp_path / "best" / "model.zip").read_bytes()
    model.learn(64)
    save_agent_dir(model, tmp_path / "best")
    assert (tmp_path / "best" / "model.zip").read_bytes() != first
    assert [p.name for p in tmp_path.iterdir()] == ["best"]


def test_a_failure_after_training_started_keeps_the_run_dir_with_status_failed(tmp_path):
    with pytest.raises(RuntimeError, match="crashed at step 100"):
        train([*FAST, "env.id=broken_envs:CrashingEnv", "~tuned", "env.n_envs=1", "algo.n_steps=64"], tmp_path)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["status"] == "failed"
    assert summary["error"] == "RuntimeError: crashed at step 100"
    assert (tmp_path / "config.yaml").is_file()


def test_leftovers_of_an_interrupted_save_are_cleaned_and_a_cut_best_swap_restored(tmp_path):
    from rlexp.rundir.agents import recover_partial_saves

    (tmp_path / ".model.tmp4242.zip").write_bytes(b"")  # killed during the final save
    (tmp_path / ".best.old").mkdir()  # killed between the two renames that swap in best/
    (tmp_path / ".best.old" / "model.zip").write_bytes(b"best")
    (tmp_path / "checkpoints" / ".step_000000000256.tmp4242").mkdir(parents=True)
    (tmp_path / "checkpoints" / "step_000000000128").mkdir()
    (tmp_path / "checkpoints" / ".step_000000000128.old").mkdir()  # swap finished: the old set is stale
    recover_partial_saves(tmp_path)
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")) == [
        "best",
        "best/model.zip",
        "checkpoints",
        "checkpoints/step_000000000128",
    ]
    assert (tmp_path / "best" / "model.zip").read_bytes() == b"best"


def test_one_owner_per_run_dir_when_three_start_at_once(tmp_path):
    """Three identical commands on one run dir: one trains, the others are refused and write nothing."""
    args = [sys.executable, "-m", "rlexp", "n_timesteps=4096", "logger=csv", "callbacks=none", "hydra.run.dir=run"]
    procs = [
        subprocess.Popen(args, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(3)
    ]
    results = [(p.wait(timeout=600), p.stderr.read()) for p in procs]
    assert sorted(rc for rc, _ in results) == [0, 1, 1], results
    for rc, err in results:
        if rc == 1:  # in use by the winner (its lock, or its summary if they came later)
            last = err.strip().splitlines()[-1]
            assert "is in use by" in last or "already holds a run (status " in last, last
    steps = [
        int(r["time/total_timesteps"]) for r in csv.DictReader((tmp_path / "run" / "logs" / "progress.csv").open())
    ]
    assert steps == sorted(set(steps))  # one writer, not interleaved
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["status"] == "completed"


@pytest.mark.slow
def test_a_run_killed_in_a_pid_namespace_resumes(tmp_path):
    """In a container every run is pid 1: the lock, not the PID, tells that the owner is gone."""
    if (
        shutil.which("unshare") is None
        or subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", "true"]).returncode
    ):
        pytest.skip("unshare --pid is not available here")
    args = [
        "n_timesteps=30000",
        "logger=csv",
        "callbacks=checkpoints",
        "callbacks.checkpoint.freq=4096",
        "hydra.run.dir=run",
    ]
    proc = subprocess.Popen(
        ["unshare", "--pid", "--fork", "--mount-proc", sys.executable, "-m", "rlexp", *args],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.time() + 300
        while len(list((tmp_path / "run" / "checkpoints").glob("step_*"))) < 1:
            assert time.time() < deadline and proc.poll() is None
            time.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the namespace's init and the run with it
        proc.wait()
    killed = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert killed["status"] == "running" and killed["pid"] == 1
    again = subprocess.run(
        [sys.executable, "-m", "rlexp", *args], cwd=tmp_path, capture_output=True, text=True, timeout=600
    )
    assert again.returncode == 0, again.stderr[-2000:]
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["status"] == "completed" and summary["resumed"][0]["step"] >= 4096


def test_a_full_disk_ends_in_one_line_naming_the_path_and_errno(small_tmpfs, tmp_path):
    run = small_tmpfs / "run"
    args = [*FAST, "n_timesteps=100000", "callbacks.checkpoint.freq=256", f"hydra.run.dir={run}"]
    result = rlexp_cli(args, cwd=tmp_path)
    assert result.returncode == 1
    # no traceback of rlexp's (the logging module reports each log line it could not write with one)
    assert result.stderr.count("Traceback") == result.stderr.count("--- Logging error ---"), result.stderr[-3000:]
    last = stderr_lines(result)[-1]
    assert last.startswith(f"rlexp: error: {run}") and last.endswith("No space left on device (errno 28)"), last
    json.loads((run / "summary.json").read_text())  # whole, whatever its last status write managed


def test_a_read_only_run_dir_is_refused_in_one_line(small_tmpfs, tmp_path):
    subprocess.run(["mount", "-o", "remount,ro", str(small_tmpfs)], check=True)
    result = rlexp_cli([*FAST, f"hydra.run.dir={small_tmpfs / 'run'}"], cwd=tmp_path)
    assert result.returncode == 1
    assert stderr_lines(result) == [
        f"rlexp: error: hydra.run.dir={small_tmpfs / 'run'}: cannot write there (Read-only file system, errno 30)"
    ]


def test_a_run_dir_whose_lock_is_held_is_refused_and_left_as_it_was(tmp_path):
    from rlexp.rundir.contract import LOCK_FILE

    train(FAST, tmp_path / "run")  # a run with its .hydra-less files; then "another process" holds it
    before = {p: p.read_bytes() for p in (tmp_path / "run").rglob("*") if p.is_file()}
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import fcntl, sys, time; f = open({str(tmp_path / 'run' / LOCK_FILE)!r}); "
            "fcntl.flock(f, fcntl.LOCK_EX); print('held', flush=True); sys.stdin.read()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        result = rlexp_cli([*FAST, "hydra.run.dir=run"], cwd=tmp_path)
    finally:
        holder.stdin.close()
        holder.wait()
    assert result.returncode == 1
    assert stderr_lines(result) == [
        f"rlexp: error: hydra.run.dir=run is in use by {lock_owner(before)}; wait for it to end or choose another directory"
    ]
    assert {p: p.read_bytes() for p in (tmp_path / "run").rglob("*") if p.is_file()} == before


def lock_owner(files) -> str:
    return next(b for p, b in files.items() if p.name == ".rlexp.lock").decode().strip()


def _as_if_killed(run_dir) -> None:
    """The run dir as a SIGKILL leaves it: summary.json still says running, and no process holds the lock."""
    summary = json.loads((run_dir / "summary.json").read_text())
    summary["status"] = "running"
    (run_dir / "summary.json").write_text(json.dumps(summary))


def _cut(path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


DAMAGED = [*FAST, "n_timesteps=1024", "env.normalize=true", "callbacks=checkpoints", "callbacks.checkpoint.freq=256"]
DAMAGED += ["callbacks.checkpoint.keep_last=4"]  # 8 envs x 32 steps: checkpoints at 256, 512, 768, 1024


def test_a_resume_passes_over_damaged_checkpoints_and_rebuilds_the_best_from_the_evaluations(tmp_path, caplog):
    train(DAMAGED, tmp_path)
    checkpoints = tmp_path / "checkpoints"
    assert sorted(d.name for d in checkpoints.iterdir()) == [f"step_{s:012d}" for s in (256, 512, 768, 1024)]
    _as_if_killed(tmp_path)
    _cut(checkpoints / "step_000000001024" / "model.zip")
    _cut(checkpoints / "step_000000000768" / "vecnormalize.pkl")
    (tmp_path / "best" / "best.json").write_text("{not json")

    summary = train(DAMAGED, tmp_path)
    assert summary["status"] == "completed" and summary["resumed"][0]["step"] == 512
    assert summary["steps_done"] == 1024
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert any("step_000000001024/model.zip" in w and "passing over the agent saved at step 1024" in w for w in warned)
    assert any("step_000000000768/vecnormalize.pkl: cut short" in w for w in warned)
    assert any("best.json is unreadable" in w for w in warned)
    # the best of the whole series, as an uninterrupted run finds it (the first of equal means)
    with np.load(tmp_path / "evaluations.npz") as data:
        means = data["results"].mean(axis=1)
        assert list(data["timesteps"]) == [128 * i for i in range(1, 9)]
        assert summary["best_eval"]["step"] == data["timesteps"][int(np.argmax(means))]
    assert json.loads((tmp_path / "best" / "best.json").read_text()) == summary["best_eval"]


def test_a_resume_with_a_cut_evaluations_file_starts_its_evaluations_afresh(tmp_path, caplog):
    train(DAMAGED, tmp_path)
    _as_if_killed(tmp_path)
    _cut(tmp_path / "evaluations.npz")
    summary = train(DAMAGED, tmp_path)
    assert summary["status"] == "completed" and summary["resumed"][0]["step"] == 1024
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert any("evaluations.npz is unreadable" in w for w in warned)
    # kept aside, not rewritten as an empty series (nothing was left to evaluate periodically)
    assert not (tmp_path / "evaluations.npz").exists() and (tmp_path / "evaluations.npz.damaged").is_file()


def _garbage_summary(run_dir) -> tuple[str, list[str]]:
    (run_dir / "summary.json").write_text("{garbage")
    return "summary.json: unreadable (Expecting property name", []


def _summary_not_an_object(run_dir) -> tuple[str, list[str]]:
    (run_dir / "summary.json").write_text("[]")
    return "summary.json: unreadable (a JSON list, not an object); move the run dir aside", []


def _interrupted_run_with_a_bad_config(run_dir) -> tuple[str, list[str]]:
    (run_dir / "summary.json").write_text(json.dumps({"status": "interrupted", "steps_done": 0}))
    (run_dir / "config.yaml").write_text("algo: [ppo\n")
    return "config.yaml: unreadable (while parsing a flow sequence", []


def _trained_agent_with_a_bad_summary(run_dir) -> tuple[str, list[str]]:
    with zipfile.ZipFile(run_dir / "model.zip", "w") as model:
        model.writestr("data", "{}")
    (run_dir / "summary.json").write_text("[]")
    return "summary.json: unreadable (a JSON list, not an object); fix or remove it", ["trained_agent=run"]


CORRUPT_RUN_FILES = [
    _garbage_summary,
    pytest.param(_summary_not_an_object, marks=pytest.mark.slow),
    pytest.param(_interrupted_run_with_a_bad_config, marks=pytest.mark.slow),
    _trained_agent_with_a_bad_summary,
]


@pytest.mark.parametrize("damage", CORRUPT_RUN_FILES, ids=["garbage", "not_an_object", "bad_config", "trained_agent"])
def test_a_corrupt_run_file_is_named_in_one_line_and_left_as_it_was(damage, tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    expected, args = damage(run_dir)
    before = {p.name: p.read_bytes() for p in run_dir.iterdir()}
    result = rlexp_cli(["n_timesteps=256", *(args or ["hydra.run.dir=run"])], cwd=tmp_path)
    assert result.returncode == 1
    (line,) = stderr_lines(result)
    assert line.startswith("rlexp: error: run/") and expected in line, line
    assert {p.name: p.read_bytes() for p in run_dir.iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]  # a trained agent's refused run made no dir


def test_a_run_of_an_older_rlexp_without_the_keys_added_since_is_the_same_run(tmp_path):
    import yaml
    from conftest import compose_cfg

    from rlexp.config.plain import plain_dict
    from rlexp.lifecycle.state import config_difference

    train([*FAST, "callbacks=none"], tmp_path)
    saved = yaml.safe_load((tmp_path / "config.yaml").read_text())
    del saved["diagnostics"], saved["random_baseline"], saved["curves"]  # an older rlexp's config.yaml
    del saved["algo"]["target_kl"], saved["algo"]["normalize_advantage"]  # (algo.*: from PPO's schema)
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(saved))
    cfg, _ = compose_cfg([*FAST, "callbacks=none"])
    assert config_difference(plain_dict(cfg), tmp_path) == ""
    # what a run reports (diagnostics, curves, logs) is not what it trains: still the same run
    cfg, _ = compose_cfg([*FAST, "callbacks=none", "diagnostics=none", "curves=true", "logger.verbose=2"])
    assert config_difference(plain_dict(cfg), tmp_path) == ""
    cfg, _ = compose_cfg([*FAST, "callbacks=none", "random_baseline.episodes=3"])
    assert config_difference(plain_dict(cfg), tmp_path) == "random_baseline.episodes"


@pytest.mark.slow
def test_latest_points_to_the_newest_run_and_is_never_a_run_of_its_own(tmp_path):
    from rlexp.reporting.report_runs import runs_in

    for _ in range(2):
        assert rlexp_cli(FAST, cwd=tmp_path).returncode == 0
    folder = tmp_path / "outputs" / "ppo-cartpole"
    runs = sorted(p for p in folder.iterdir() if p.name != "latest")
    assert len(runs) == 2 and (folder / "latest").resolve() == runs[-1]
    assert os.readlink(folder / "latest") == runs[-1].name  # relative: the folder can move
    assert runs_in(folder) == runs
    result = rlexp_cli(["evaluate", "outputs/ppo-cartpole/latest", "--episodes", "1"], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    # continuing the latest run: the link is read before the new run re-points it, and the records name the run
    result = rlexp_cli([*FAST, "trained_agent=outputs/ppo-cartpole/latest"], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    newest = (folder / "latest").resolve()
    said = f"rlexp: continuing the agent of outputs/ppo-cartpole/{runs[-1].name} from its step 256: 256 steps more, to step 512"
    assert said in result.stdout.splitlines()
    assert newest not in runs and json.loads((newest / "summary.json").read_text())["trained_agent"] == str(
        runs[-1].relative_to(tmp_path)
    )
    # a run dir of one's own choosing gets no link next to it
    assert rlexp_cli([*FAST, "hydra.run.dir=mine/run"], cwd=tmp_path).returncode == 0
    assert not (tmp_path / "mine" / "latest").exists()
