"""Hyperparameter search through rlexp's Optuna sweeper: real studies, small budgets, the real command."""

from __future__ import annotations

import csv
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import optuna
import pytest
import yaml
from background import LATE_SIGNAL_ENV
from conftest import SMALL_SEARCH, compose_cfg, rlexp_cli, stderr_lines, wait_for_episodes
from hydra import compose, initialize_config_module
from optuna.trial import TrialState

from rlexp.config.hydra_versions import version_base
from rlexp.search.space import parse_search_space

SMALL = ["-m", *SMALL_SEARCH, "hydra.sweep.dir=sweep"]


def _study(tmp_path, name="ppo-cartpole"):
    return optuna.load_study(study_name=name, storage=f"sqlite:///{tmp_path / 'sweep' / 'study.db'}")


def _finished(study):
    return [t for t in study.trials if t.state != TrialState.RUNNING and not t.user_attrs.get("rlexp_interrupted")]


@pytest.mark.parametrize(
    ("algo", "env"),
    [
        ("ppo", "cartpole"),
        ("a2c", "cartpole"),
        ("dqn", "cartpole"),
        ("sac", "pendulum"),
        ("td3", "pendulum"),
        ("tqc", "pendulum"),
    ],
)
def test_search_space_of_each_algorithm_composes(algo, env):
    with initialize_config_module(config_module="rlexp.conf", **version_base()):
        cfg = compose("config", overrides=["hparams=search", f"algo={algo}", f"env={env}"], return_hydra_config=True)
    assert cfg.hydra.mode.name == "MULTIRUN"
    assert cfg.hydra.sweeper._target_ == "hydra_plugins.rlexp_optuna_sweeper.sweeper.OptunaSweeper"
    space = parse_search_space(cfg.hydra.sweeper.params, [], cfg)
    assert len(space) >= 6
    assert cfg.hydra.sweeper.sampler.seed == cfg.hydra.sweeper.seed
    # a stable sweep dir per algo-env, so that re-running the command resumes its study
    assert cfg.hydra.sweep.dir == f"multirun/search/{algo}-{env}"
    assert cfg.hydra.sweeper.study_name == f"{algo}-{env}"


@pytest.mark.slow
def test_search_end_to_end_results_retrain_and_resume(tmp_path):
    result = rlexp_cli([*SMALL, "hydra.sweeper.n_trials=4"], cwd=tmp_path, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    study = _study(tmp_path)
    assert len(_finished(study)) == 4
    assert all(t.intermediate_values for t in study.trials)  # every job reported to the study
    sweep = tmp_path / "sweep"
    results = yaml.safe_load((sweep / "optimization_results.yaml").read_text())
    assert results["best"]["value"] == study.best_value
    rows = list(csv.DictReader((sweep / "trials.csv").open()))
    assert [int(r["number"]) for r in rows] == [0, 1, 2, 3]
    # one closing line: trials by state, the best value, where the params are
    states = [t.state for t in study.trials]
    pruned, complete = states.count(TrialState.PRUNED), states.count(TrialState.COMPLETE)
    assert result.stdout.strip().splitlines()[-1] == (
        f"rlexp: search ppo-cartpole done: 4 trials ({complete} completed, {pruned} pruned, 0 failed); "
        f"best {study.best_value:.6g} (trial {study.best_trial.number}); params: {sweep / 'tuned' / 'ppo_cartpole_search.yaml'}"
    )
    # each trial's line: the overrides that re-run it, each once, none of the sweeper's plumbing
    # (Hydra's launcher line "\t#k : overrides", on the console as "rlexp: #k : overrides")
    trial_lines = [line for line in result.stdout.splitlines() if re.match(r"rlexp: #\d+ : ", line)]
    assert len(trial_lines) == 4
    for line in trial_lines:
        overrides = line.split(" : ", 1)[1].split()
        assert not any("env_set" in o for o in overrides)
        keys = [o.split("=", 1)[0] for o in overrides]
        assert len(keys) == len(set(keys)), line
    assert {p.name for p in (sweep / "plots").iterdir()} >= {"history.png", "intermediate_values.png"}
    # each trial's first lines say the values it samples, over the tuned file's
    started = [line for line in result.stdout.splitlines() if line.startswith("rlexp: search trial ")]
    tuned = [line for line in result.stdout.splitlines() if line.startswith("rlexp: tuned hyperparameters: ")]
    assert len(started) == len(tuned) == 4 and all(
        line.endswith(", under the trial's sampled values") for line in tuned
    )
    for t, line in zip(sorted(study.trials, key=lambda t: t.number), sorted(started), strict=True):
        for key in t.params:
            assert f" {key}=" in line or f": {key}=" in line, (key, line)
    for t in study.trials:
        summary = json.loads((sweep / f"trial_{t.number:04d}" / "summary.json").read_text())
        assert summary["seed"] == t.number  # trial k trains with sweep seed + k
        assert summary["status"] == ("pruned" if t.state == TrialState.PRUNED else "completed")

    # the best trial's command re-runs it as a normal training run, to the same value
    best = study.best_trial
    command = next(r["command"] for r in rows if int(r["number"]) == best.number)
    rerun = rlexp_cli([*shlex.split(command)[1:], "hydra.run.dir=rerun"], cwd=tmp_path)
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    assert json.loads((tmp_path / "rerun" / "summary.json").read_text())["final_eval"]["mean"] == best.value
    # ...and so does the tuned file the search wrote, with the command its results print
    printed = shlex.split(results["train_with_it"])[1:]
    tuned = rlexp_cli(
        [*printed, f"seed={best.number}", "callbacks.eval.final_episodes=3", "hydra.run.dir=tuned"], cwd=tmp_path
    )
    assert tuned.returncode == 0, tuned.stderr[-2000:]
    summary = json.loads((tmp_path / "tuned" / "summary.json").read_text())
    assert summary["tuned_file"] == "ppo_cartpole_search"
    assert summary["final_eval"]["mean"] == best.value

    # the same command again resumes the study: finished trials count towards n_trials
    result = rlexp_cli([*SMALL, "hydra.sweeper.n_trials=5"], cwd=tmp_path, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert len(_finished(_study(tmp_path))) == 5
    # ...and run once more, past its end, says so and trains nothing
    result = rlexp_cli([*SMALL, "hydra.sweeper.n_trials=5"], cwd=tmp_path, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "nothing to run: raise hydra.sweeper.n_trials above 5" in result.stdout + result.stderr
    assert len(_study(tmp_path).trials) == 5
    # another search space in the same sweep dir is refused, naming the change and the commands of both
    # (algo.gamma fixed: out of the search space's file; tests/search/test_same_search.py: the same search)
    other = [*SMALL, "hydra.sweeper.n_trials=1", "algo.gamma=0.9", "hydra/launcher=basic"]
    result = rlexp_cli(other, cwd=tmp_path)
    (line,) = stderr_lines(result)
    assert result.returncode == 1 and line.startswith(
        f"rlexp: error: study ppo-cartpole in sqlite:///{tmp_path / 'sweep' / 'study.db'} was made for another search "
        "(algo.gamma=0.9 now, choice(0.9, 0.95, 0.98, 0.99, 0.995, 0.999, 0.9999) in the study); a new search: rlexp "
    )
    assert len(_study(tmp_path).trials) == 5
    new, same = re.fullmatch(r".*; a new search: (rlexp .*); this one: (rlexp .*)", line).groups()
    assert "hydra.sweep.dir=sweep-2" in new and new.count("hydra.sweep.dir=") == 1
    for command, says in ((new, "done: 1 trials"), (same, "nothing to run: raise hydra.sweeper.n_trials above 5")):
        result = rlexp_cli(shlex.split(command)[1:], cwd=tmp_path, timeout=600)
        assert result.returncode == 0 and says in result.stdout + result.stderr, result.stderr[-2000:]
    assert len(_study(tmp_path).trials) == 5


def test_pruned_trials_stop_early_and_are_recorded_as_pruned(tmp_path):
    always_prune = [
        "hydra/sweeper/pruner=none",
        "hydra.sweeper.pruner._target_=optuna.pruners.ThresholdPruner",
        "+hydra.sweeper.pruner.lower=1e9",
    ]
    result = rlexp_cli([*SMALL, "hydra.sweeper.n_trials=2", *always_prune], cwd=tmp_path, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    study = _study(tmp_path)
    assert [t.state for t in study.trials] == [TrialState.PRUNED, TrialState.PRUNED]
    run = tmp_path / "sweep" / "trial_0000"
    summary = json.loads((run / "summary.json").read_text())
    assert summary["status"] == "pruned"
    assert summary["steps_done"] < 1024
    # as tune.md says: no final agent or evaluation, the agent of its best evaluation kept
    assert not (run / "model.zip").exists() and "final_eval" not in summary and (run / "best" / "model.zip").is_file()
    # and as scale.md says, a report leaves pruned runs out, naming them
    report = rlexp_cli(["report", "sweep"], cwd=tmp_path)
    (line,) = stderr_lines(report)
    assert line.startswith("rlexp report: error: no run to report on: ") and line.count(": pruned") == 2, line


def test_failing_trials_are_recorded_and_stop_the_sweep_past_the_failure_rate(tmp_path):
    # every job fails (its front door refuses 0); a sweep, so that the search's own check lets it through
    broken = ["env.max_episode_steps=choice(0)"]
    result = rlexp_cli(
        [*SMALL, "hydra.sweeper.n_trials=2", "hydra.sweeper.max_failure_rate=1.0", *broken], cwd=tmp_path, timeout=600
    )
    assert result.returncode == 0, result.stderr[-3000:]
    study = _study(tmp_path)
    assert [t.state for t in study.trials] == [TrialState.FAIL, TrialState.FAIL]
    assert all(t.user_attrs["fail_reason"] for t in study.trials)

    result = rlexp_cli([*SMALL, "hydra.sweeper.n_trials=8", "hydra.sweep.dir=sweep2", *broken], cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1].startswith("rlexp: error: 4 of 4 trials failed, above")
    assert (
        len(
            optuna.load_study(study_name="ppo-cartpole", storage=f"sqlite:///{tmp_path / 'sweep2' / 'study.db'}").trials
        )
        == 4
    )


@pytest.mark.slow  # a DQN search: in CI's slow run
def test_search_that_adds_keys_dqn_net_arch(tmp_path):
    """Spaces may add keys (++algo.policy_kwargs.net_arch): the jobs compose and train."""
    dqn = [
        "-m",
        "hparams=search",
        "algo=dqn",
        "env=cartpole",
        "n_timesteps=512",
        "callbacks.eval.n_evaluations=2",
        "callbacks.eval.n_episodes=1",
        "callbacks.eval.final_episodes=1",
        "hydra.sweeper.n_trials=2",
        "hydra.sweep.dir=sweep",
    ]
    result = rlexp_cli(dqn, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    study = optuna.load_study(study_name="dqn-cartpole", storage=f"sqlite:///{tmp_path / 'sweep' / 'study.db'}")
    assert [t.state for t in study.trials] == [TrialState.COMPLETE] * 2
    for t in study.trials:
        used = yaml.safe_load((tmp_path / "sweep" / f"trial_{t.number:04d}" / "config.yaml").read_text())
        assert used["algo"]["policy_kwargs"]["net_arch"] == json.loads(t.params["++algo.policy_kwargs.net_arch"])


def test_max_total_trials_caps_the_study(tmp_path):
    result = rlexp_cli([*SMALL, "hydra.sweeper.n_trials=10", "hydra.sweeper.max_total_trials=2"], cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert len(_study(tmp_path).trials) == 2


@pytest.mark.slow
def test_killed_sweep_resumes_to_exactly_n_trials(tmp_path):
    command = [sys.executable, "-m", "rlexp", *SMALL, "n_timesteps=4096", "hydra.sweeper.n_trials=3"]
    proc = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 300
    while time.time() < deadline and not (tmp_path / "sweep" / "trial_0001" / "summary.json").exists():
        time.sleep(0.1)
    # trial 1 has started (its summary.json comes first): killed now, on any machine it is still running
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    interrupted = _study(tmp_path).trials[1]
    assert interrupted.state == TrialState.RUNNING

    result = rlexp_cli([*SMALL, "n_timesteps=4096", "hydra.sweeper.n_trials=3"], cwd=tmp_path, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    study = _study(tmp_path)
    finished = _finished(study)
    assert len(finished) == 3
    assert study.trials[1].user_attrs.get("rlexp_interrupted")
    assert study.trials[1].user_attrs["fail_reason"].startswith("interrupted: its sweeper (")
    rows = list(csv.DictReader((tmp_path / "sweep" / "trials.csv").open()))
    assert rows[1]["fail_reason"].startswith("interrupted: ")
    (requeued,) = [t for t in finished if t.user_attrs.get("requeued_from") == 1]
    assert requeued.params == interrupted.params  # run again, not lost


# bad input -> (overrides, text of the one-line error)
BAD_SEARCH = {
    "unknown sampler": (
        ["hydra/sweeper/sampler=annealing"],
        "hydra/sweeper/sampler=annealing: no such option; options: ",
    ),
    "unknown pruner": (["hydra/sweeper/pruner=patient"], "hydra/sweeper/pruner=patient: no such option; options: "),
    "param the algorithm lacks": (["algo.buffer_size=choice(100,1000)"], "algo.buffer_size: no such key"),
    "reversed interval": (["algo.gamma=interval(0.99,0.9)"], "interval(0.99, 0.9) is empty or reversed"),
    "empty range": (["algo.n_epochs=range(5,1)"], "algo.n_epochs: range(5,1) is empty"),
    "unreachable storage": (
        ["hydra.sweeper.storage=postgresql://u:p@127.0.0.1:9/none"],
        "hydra.sweeper.storage=postgresql://u:***@127.0.0.1:9/none: cannot open the storage (retried for 2 s) (",
    ),
    "a seed of its own": (["seed=5"], "seed=5: a search seeds trial k with hydra.sweeper.seed"),
    "seeds swept": (["seed=1,2"], "seed=1,2: a search seeds trial k with hydra.sweeper.seed"),
}


@pytest.mark.parametrize("case", sorted(BAD_SEARCH))
def test_bad_search_input_is_one_line_and_writes_no_trial(case, tmp_path):
    overrides, expected = BAD_SEARCH[case]
    result = rlexp_cli([*SMALL, *overrides], cwd=tmp_path, env={"RLEXP_STORAGE_RETRY_S": "2"})
    assert result.returncode == 1
    lines = stderr_lines(result)
    assert len(lines) == 1 and expected in lines[0], result.stderr
    db = tmp_path / "sweep" / "study.db"
    assert not db.exists() or not optuna.get_all_study_summaries(f"sqlite:///{db}")


def test_existing_study_with_another_direction_is_refused(tmp_path):
    (tmp_path / "sweep").mkdir()
    storage = f"sqlite:///{tmp_path / 'sweep' / 'study.db'}"
    optuna.create_study(study_name="ppo-cartpole", storage=storage, direction="minimize")
    result = rlexp_cli(SMALL, cwd=tmp_path)
    assert result.returncode == 1
    assert "exists in" in result.stderr and "direction=minimize, not maximize" in result.stderr
    assert optuna.load_study(study_name="ppo-cartpole", storage=storage).trials == []


@pytest.mark.parametrize("damage", ["cut by 5 bytes", "not a database"])
def test_a_damaged_sqlite_study_is_refused_before_anything_is_written(damage, tmp_path):
    """SQLite and Optuna open a study cut short without a word (its quick_check passes too); the search
    refuses it in one line and leaves the file as it was."""
    db = tmp_path / "sweep" / "study.db"
    db.parent.mkdir()
    study = optuna.create_study(study_name="ppo-cartpole", storage=f"sqlite:///{db}", direction="maximize")
    study.optimize(lambda t: t.suggest_float("x", 0, 1), n_trials=5)
    data = db.read_bytes()
    db.write_bytes(data[:-5] if damage == "cut by 5 bytes" else b"not sqlite " * 100)
    before = db.read_bytes()
    result = rlexp_cli(SMALL, cwd=tmp_path)
    assert result.returncode == 1
    (line,) = stderr_lines(result)
    assert f"hydra.sweeper.storage=sqlite:///{db}: the SQLite file is damaged (" in line, line
    assert db.read_bytes() == before
    assert not list((tmp_path / "sweep").glob("trial_*"))


def test_two_sweepers_share_one_postgresql_study(tmp_path, postgres):
    """Two sweeper processes on one study finish max_total_trials trials between them, none twice; one
    has the password in its storage URL, the other in PGPASSWORD: neither prints or writes it."""
    shared = [*SMALL, "hydra.sweeper.study_name=shared", "hydra.sweeper.n_trials=5", "hydra.sweeper.max_total_trials=5"]
    without = postgres.url.replace(f":{postgres.password}@", "@")
    workers = [
        subprocess.Popen(
            [sys.executable, "-m", "rlexp", *shared, f"hydra.sweeper.storage={url}", f"hydra.sweep.dir=worker{i}"],
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **env},
        )
        for i, (url, env) in enumerate([(postgres.url, {}), (without, {"PGPASSWORD": postgres.password})])
    ]
    said = []
    for worker in workers:
        out, err = worker.communicate(timeout=600)
        assert worker.returncode == 0, err[-3000:]
        said.append(out + err)
    assert "holds a password: rlexp prints and writes it as ***" in said[0]
    assert "holds a password" not in said[1] and f"in {without}: 0 of 5 trials finished" in said[1]
    assert all(postgres.password not in text for text in said), said
    written = [p for p in tmp_path.rglob("*") if p.is_file() and postgres.password.encode() in p.read_bytes()]
    assert not written
    assert len(list(tmp_path.glob("worker*/trial_*/.hydra/hydra.yaml"))) == 5  # (what Hydra writes was read)
    postgres_url = postgres.url
    study = optuna.load_study(study_name="shared", storage=postgres_url)
    counted = [t for t in study.trials if not t.user_attrs.get("rlexp_over_cap")]
    assert len(counted) == 5
    assert all(t.state in (TrialState.COMPLETE, TrialState.PRUNED) for t in counted)
    runs = sorted(p.parent.name for p in tmp_path.glob("worker*/trial_*/summary.json"))
    assert runs == sorted(f"trial_{t.number:04d}" for t in counted)  # each trial ran once, in one worker
    assert {p.parent.parent.name for p in tmp_path.glob("worker*/trial_*/summary.json")} == {"worker0", "worker1"}
    params = [tuple(sorted(t.params.items())) for t in counted]
    assert len(set(params)) == len(params)  # the workers' samplers do not replay each other


def test_a_server_that_goes_away_mid_search_is_waited_for_and_no_trial_is_lost(tmp_path, postgres):
    """PostgreSQL stopped while a trial trains (its next report cannot reach it) and started again once the
    search says it is retrying: the search goes on and finishes every trial once."""
    search = [
        *SMALL,
        "n_timesteps=4096",
        "hydra/sweeper/pruner=none",
        f"hydra.sweeper.storage={postgres.url}",
        "hydra.sweeper.study_name=brief",
        "hydra.sweeper.n_trials=2",
    ]
    sweeper = subprocess.Popen(
        [sys.executable, "-m", "rlexp", *search],
        cwd=tmp_path,
        env={**os.environ, "RLEXP_STORAGE_RETRY_S": "300"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    said: list[str] = []
    try:
        first = tmp_path / "sweep" / "trial_0000" / "summary.json"
        deadline = time.time() + 300
        while not (first.is_file() and json.loads(first.read_text())["status"] == "running"):
            assert time.time() < deadline and sweeper.poll() is None, sweeper.communicate()[0][-3000:]
            time.sleep(0.05)
        postgres.stop()
        try:
            for line in sweeper.stdout:  # (waits on the search's own words, not on a clock)
                said.append(line)
                if "unreachable" in line and "retrying in" in line:
                    break
        finally:
            postgres.start()
        rest, _ = sweeper.communicate(timeout=600)
    finally:
        sweeper.kill()
    assert sweeper.returncode == 0, ("".join(said) + rest)[-3000:]
    assert any("storage postgresql://optuna:***@" in line for line in said)  # no password in the log
    study = optuna.load_study(study_name="brief", storage=postgres.url)
    assert [t.state for t in study.trials] == [TrialState.COMPLETE, TrialState.COMPLETE]
    assert all(len(t.intermediate_values) >= 3 for t in study.trials)  # the reports around the outage too


def test_journal_file_storage(tmp_path):
    journal = tmp_path / "shared" / "study.log"
    result = rlexp_cli(
        [*SMALL, f"hydra.sweeper.storage=journal:///{journal}", "hydra.sweeper.n_trials=2"], cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr[-3000:]
    from rlexp.search.storage import open_storage

    study = optuna.load_study(study_name="ppo-cartpole", storage=open_storage(f"journal:///{journal}"))
    assert len(study.trials) == 2 and all(t.intermediate_values for t in study.trials)


@pytest.mark.slow  # parallel jobs, about a minute: in CI's slow run
def test_pruning_from_parallel_submitit_local_jobs(tmp_path):
    """Two trials at once in separate processes (submitit's local launcher) report to and are told by the study."""
    always_prune = [
        "hydra/sweeper/pruner=none",
        "hydra.sweeper.pruner._target_=optuna.pruners.ThresholdPruner",
        "+hydra.sweeper.pruner.lower=1e9",
    ]
    result = rlexp_cli(
        [*SMALL, "hydra/launcher=submitit_local", "hydra.sweeper.n_jobs=2", "hydra.sweeper.n_trials=2", *always_prune],
        cwd=tmp_path,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    study = _study(tmp_path)
    assert [t.state for t in study.trials] == [TrialState.PRUNED, TrialState.PRUNED]
    pids = {json.loads((tmp_path / "sweep" / f"trial_{k:04d}" / "summary.json").read_text())["pid"] for k in (0, 1)}
    assert len(pids) == 2  # each trial ran in its own process


def test_installed_hydra_optuna_sweeper_is_reported(tmp_path):
    fake = tmp_path / "site" / "hydra_plugins" / "hydra_optuna_sweeper"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    env = {"PYTHONPATH": str(tmp_path / "site")}
    result = rlexp_cli([*SMALL, "hydra.sweeper.n_trials=1"], cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "hydra-optuna-sweeper is installed too" in result.stdout + result.stderr
    assert "rlexp's sweeper (hydra_plugins.rlexp_optuna_sweeper.sweeper)" in result.stdout + result.stderr


@pytest.mark.parametrize("sampler", ["tpe", "random", "cmaes", "gp", "qmc", "nsgaii"])
@pytest.mark.parametrize("pruner", ["median", "successive_halving", "hyperband", "none"])
def test_every_sampler_and_pruner_builds_seeded(sampler, pruner):
    from rlexp.config.hydra_versions import instantiate

    overrides = [
        "hparams=search",
        f"hydra/sweeper/sampler={sampler}",
        f"hydra/sweeper/pruner={pruner}",
        "hydra.sweeper.seed=7",
    ]
    with initialize_config_module(config_module="rlexp.conf", **version_base()):
        cfg = compose("config", overrides=overrides, return_hydra_config=True)
    built = instantiate(cfg.hydra.sweeper.sampler)  # (as the sweeper builds it: rlexp.config.hydra_versions)
    assert isinstance(built, optuna.samplers.BaseSampler)
    assert cfg.hydra.sweeper.sampler.seed == 7
    assert isinstance(instantiate(cfg.hydra.sweeper.pruner), optuna.pruners.BasePruner)


@pytest.mark.slow  # a search and its retrainings: in CI's slow run
def test_robust_selection_retrains_the_top_trials_on_fresh_seeds(tmp_path):
    robust = [
        "hydra.sweeper.n_trials=3",
        "hydra.sweeper.retrain_top_k=2",
        "hydra.sweeper.retrain_seeds=2",
        "hydra/sweeper/pruner=none",
    ]
    result = rlexp_cli([*SMALL, *robust], cwd=tmp_path, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    sweep = tmp_path / "sweep"
    report = yaml.safe_load((sweep / "retrain.yaml").read_text())
    assert len(report["candidates"]) == 2
    assert all(len(c["values"]) == 2 for c in report["candidates"])
    best_mean = max(c["mean"] for c in report["candidates"])
    assert next(c for c in report["candidates"] if c["trial"] == report["winner"])["mean"] == best_mean
    runs = sorted(p.parent.name for p in (sweep / "retrain").glob("*/summary.json"))
    assert len(runs) == 4 and all("_seed_100000" in r for r in runs)
    results = yaml.safe_load((sweep / "optimization_results.yaml").read_text())
    assert results["best"]["trial"] == report["winner"]
    assert f"trial {report['winner']}," in (sweep / "tuned" / "ppo_cartpole_search.yaml").read_text()


@pytest.mark.slow  # trials of two seeds each: in CI's slow run
def test_several_seeds_per_trial_objective_is_their_mean(tmp_path):
    """Each trial trains seeds seed + k*2 and + 1 one after another; its value is the mean of their final
    evals; intermediate values continue across the seeds (4 evaluations each, so steps 1..8)."""
    args = [*SMALL, "hydra.sweeper.n_trials=2", "hydra.sweeper.seeds_per_trial=2", "hydra/sweeper/pruner=none"]
    result = rlexp_cli(args, cwd=tmp_path, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    study = _study(tmp_path)
    sweep = tmp_path / "sweep"
    rows = {int(r["number"]): r for r in csv.DictReader((sweep / "trials.csv").open())}
    for t in study.trials:
        assert t.state == TrialState.COMPLETE
        seeds = [2 * t.number, 2 * t.number + 1]  # never shared between trials
        summaries = [
            json.loads((sweep / f"trial_{t.number:04d}" / f"seed_{s}" / "summary.json").read_text()) for s in seeds
        ]
        finals = [s["final_eval"]["mean"] for s in summaries]
        assert [s["seed"] for s in summaries] == seeds
        assert t.value == pytest.approx(sum(finals) / 2)
        assert sorted(t.intermediate_values) == list(range(1, 9))
        # the second seed reports running means over both seeds
        evals = [
            np.load(sweep / f"trial_{t.number:04d}" / f"seed_{s}" / "evaluations.npz")["results"].mean(axis=1)
            for s in seeds
        ]
        assert t.intermediate_values[1] == pytest.approx(evals[0][0])
        assert t.intermediate_values[8] == pytest.approx((evals[0][3] + evals[1][3]) / 2)
        # the trial's command re-runs both seeds
        assert (
            rows[t.number]["command"].startswith("rlexp -m ")
            and f"seed={seeds[0]},{seeds[1]}" in rows[t.number]["command"]
        )
    assert not (sweep / "report").exists()  # a search's trials are not seeds of one condition: no seed report
    tuned = (sweep / "tuned" / "ppo_cartpole_search.yaml").read_text()
    assert f"seeds {2 * study.best_trial.number}, {2 * study.best_trial.number + 1}" in tuned


def test_a_batch_failed_by_the_launcher_keeps_the_outcomes_its_run_dirs_hold(tmp_path):
    """submitit's launcher raises for the first job of a batch that died and drops the others' results;
    the sweeper reads them back from their run dirs."""
    from conftest import FAST, train

    from rlexp.search.results import RUN_DIR_ATTR
    from rlexp.sweeper.outcomes import recorded_outcome

    done = train(FAST, tmp_path / "trial_0000")
    study = optuna.create_study(direction="maximize")
    trials = [study.ask() for _ in range(2)]
    trials[0].set_user_attr(RUN_DIR_ATTR, str(tmp_path / "trial_0000"))
    trials[1].set_user_attr(RUN_DIR_ATTR, str(tmp_path / "trial_0001"))  # its job died before writing anything
    died = RuntimeError("Job 7 has not produced any output (state: CANCELLED)")
    outcomes = [recorded_outcome(t, died) for t in trials]
    assert outcomes[0].completed and outcomes[0].value == done["final_eval"]["mean"]
    assert not outcomes[1].completed and outcomes[1].value is died


def test_search_space_fits_the_per_trial_budget():
    from rlexp.errors import ConfigError
    from rlexp.search.space import parse_search_space

    cfg, _ = compose_cfg(["hparams=search", "algo=sac", "env=pendulum", "n_timesteps=20000"])
    space = parse_search_space(cfg.search_space, [], cfg)
    assert space["algo.learning_starts"].choices == (0, 1000, 10000)  # 20000 would never train
    cfg, _ = compose_cfg(["hparams=search", "algo=ppo", "env=cartpole", "n_timesteps=1024"])  # tuned: 8 envs
    space = parse_search_space({"algo.n_steps": "range(16,4096,16)"}, [], cfg)
    assert (space["algo.n_steps"].low, space["algo.n_steps"].high) == (16, 128)
    with pytest.raises(ConfigError, match=r"algo.n_steps: every choice \[512, 1024\] exceeds 128"):
        parse_search_space({"algo.n_steps": "choice(512,1024)"}, [], cfg)


def test_a_range_of_floats_is_a_stepped_float_distribution():
    """As hydra-optuna-sweeper reads it: Hydra's stop excluded, the last value counted in decimal."""
    from optuna.distributions import FloatDistribution

    from rlexp.errors import ConfigError
    from rlexp.search.space import parse_search_space

    cfg, _ = compose_cfg(["hparams=search"])
    space = parse_search_space({"algo.gamma": "range(0.9,0.99,0.01)", "algo.n_epochs": "range(1,5)"}, [], cfg)
    assert space["algo.gamma"] == FloatDistribution(0.9, 0.98, step=0.01)
    assert (space["algo.n_epochs"].low, space["algo.n_epochs"].high, space["algo.n_epochs"].step) == (1, 4, 1)
    with pytest.raises(ConfigError, match=r"^hydra.sweeper.params.algo.gamma: range\(0.99,0.9,0.01\) is empty$"):
        parse_search_space({"algo.gamma": "range(0.99,0.9,0.01)"}, [], cfg)


@pytest.mark.slow
def test_a_stop_signal_as_a_trial_completes_records_it_and_ends_the_search(tmp_path):
    shutil.copy(LATE_SIGNAL_ENV, tmp_path / "late.py")
    late = ["env.id=late:LateSignalEnv", "+env.eval_kwargs.kill_on_close=true", "hydra.sweeper.study_name=late"]
    late.append("random_baseline.episodes=0")  # its env, closed once stepped, would signal before training
    result = rlexp_cli([*SMALL, *late, "hydra.sweeper.n_trials=3"], cwd=tmp_path, timeout=600)
    assert result.returncode == 128 + signal.SIGTERM, result.stderr[-3000:]
    assert result.stderr.strip().splitlines()[-1] == (
        f"rlexp: SIGTERM came as the run in {tmp_path / 'sweep' / 'trial_0000'} completed; re-run the same command to "
        "continue the search"
    )
    study = _study(tmp_path, "late")
    assert [t.state for t in study.trials] == [TrialState.COMPLETE]  # told before the search stopped
    with open(tmp_path / "sweep" / "trials.csv") as f:
        assert [row["state"] for row in csv.DictReader(f)] == ["COMPLETE"]


@pytest.mark.slow  # three trainings of 8k steps: in CI's slow run
def test_a_stopped_search_hands_its_trial_over_and_every_hint_it_gives_runs(tmp_path):
    """SIGTERM mid-trial: the trial is queued again at once; the stop line, the report's hint
    (command.txt) and the same search command each run as printed, and the search continues the trial
    from its checkpoint, in its run dir with its seed, its steps not repeated."""
    search = [*SMALL, "n_timesteps=8192", "hydra/sweeper/pruner=none", "hydra.sweeper.n_trials=2"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "rlexp", *search],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    run = tmp_path / "sweep" / "trial_0000"
    wait_for_episodes(run, 5, proc)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 128 + signal.SIGTERM, err[-3000:]
    stopped = json.loads((run / "summary.json").read_text())
    assert stopped["status"] == "interrupted" and 0 < stopped["steps_done"] < 8192
    assert err.strip().splitlines()[-1] == (
        f"rlexp: stopped by SIGTERM at step {stopped['steps_done']}; checkpoint in {run / 'resume'}; the trial is "
        "queued again: the search's next worker to ask for a trial, or this command run again, continues it "
        "from this checkpoint (same seed and run dir)"
    )
    study = _study(tmp_path)
    lost, queued = study.trials
    assert lost.state == TrialState.FAIL and lost.user_attrs["rlexp_interrupted"]
    assert queued.state == TrialState.WAITING and queued.user_attrs["requeued_from"] == 0

    # the report names it and its hint (here, its only run, in its one line); command.txt finishes it
    # alone, as printed (tried on this state, then the state put back for the search)
    report = rlexp_cli(["report", "sweep"], cwd=tmp_path)
    assert stderr_lines(report) == [
        "rlexp report: error: no run to report on: sweep/trial_0000: interrupted (resumable: its command.txt "
        "finishes it; a search's trial also continues when its search runs again)"
    ]
    shutil.copytree(tmp_path / "sweep", tmp_path / "before")
    alone = rlexp_cli(shlex.split((run / "command.txt").read_text())[1:], cwd=tmp_path, timeout=600)
    assert alone.returncode == 0, alone.stderr[-3000:]
    finished = json.loads((run / "summary.json").read_text())
    assert finished["status"] == "completed" and finished["resumed"][0]["step"] == stopped["steps_done"]
    assert finished["seed"] == 0 and finished["steps_done"] == stopped["target_steps"]
    shutil.rmtree(tmp_path / "sweep")
    (tmp_path / "before").rename(tmp_path / "sweep")

    again = rlexp_cli(search, cwd=tmp_path, timeout=900)
    assert again.returncode == 0, again.stderr[-3000:]
    said = again.stdout + again.stderr
    assert (
        f"trial 1 continues the run of trial 0 (trial_0000) from its checkpoint at step {stopped['steps_done']}" in said
    )
    continued = json.loads((run / "summary.json").read_text())
    assert continued["status"] == "completed" and continued["seed"] == 0
    assert continued["resumed"][0]["step"] == stopped["steps_done"]  # from its checkpoint, no step repeated
    assert continued["steps_done"] == stopped["target_steps"]
    study = _study(tmp_path)
    assert len(_finished(study)) == 2 and study.trials[1].user_attrs["rlexp_run_of"] == 0
    assert not (tmp_path / "sweep" / "trial_0001").exists()  # trial 1 is trial 0's run, continued
