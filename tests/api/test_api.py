"""The Python API (rlexp.compose, train, load_run, Run, report), called in this test process: two
trainings in one process, both runs read back; errors raised as the command's one line; nothing of a run
left installed in the process (Hydra's global state, signal handlers, torch threads)."""

from __future__ import annotations

import json
import shlex
import signal

import pytest
import torch
from conftest import FAST, rlexp_cli, stderr_lines
from hydra.core.global_hydra import GlobalHydra
from omegaconf import OmegaConf
from stable_baselines3 import A2C, PPO

import rlexp

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGUSR1, signal.SIGUSR2, signal.SIGCONT)


def _process_state() -> tuple:
    return tuple(signal.getsignal(s) for s in SIGNALS), torch.get_num_threads(), GlobalHydra.instance().is_initialized()


def test_two_trainings_in_one_process_and_both_runs_read_back(tmp_path):
    before = _process_state()
    cfg = rlexp.compose([*FAST, "algo=ppo", "n_timesteps=2.56e2"])
    cfg.seed = 3  # a change after composing is trained, and recorded as an override
    first = rlexp.train(cfg, run_dir=tmp_path / "runs" / "ppo")
    assert _process_state() == before
    second = rlexp.train([*FAST, "algo=a2c"], run_dir=tmp_path / "runs" / "a2c")
    assert _process_state() == before

    assert (first.summary["seed"], first.summary["status"], second.summary["algo"]) == (3, "completed", "a2c")
    assert first.config.seed == 3 and second.config.algo.n_steps == rlexp.compose(["algo=a2c"]).algo.n_steps
    # command.txt re-runs the API's run from the shell: its overrides compose the same config
    command = shlex.split((first.dir / "command.txt").read_text())
    assert command[0] == "rlexp" and "seed=3" in command
    again = rlexp.compose([o for o in command[1:] if not o.startswith("hydra.")])
    assert OmegaConf.to_yaml(again, resolve=True) == (first.dir / "config.yaml").read_text()
    assert (first.dir / ".hydra" / "overrides.yaml").is_file() and (first.dir / "rlexp.log").is_file()

    loaded = rlexp.load_run(tmp_path / "runs" / "ppo")
    assert loaded.dir == first.dir and loaded.summary == first.summary
    model = loaded.load_agent("final")
    assert isinstance(model, PPO) and isinstance(second.load_agent("best"), A2C)
    action, _ = model.predict(model.get_env().reset(), deterministic=True)
    assert action.shape == (1,)

    final = first.summary["final_eval"]
    record = first.evaluate(episodes=final["episodes"])  # the run's final episodes and seed: its final_eval
    assert (record["mean"], record["std"]) == (final["mean"], final["std"])
    assert _process_state() == before

    tables = rlexp.report([tmp_path / "runs"], reps=1000)
    assert sorted(tables["groups"]["group"]) == ["algo=a2c", "algo=ppo"]
    assert sorted(tables["runs"]["run_dir"]) == sorted([str(first.dir), str(second.dir)])
    assert (tmp_path / "runs" / "report" / "report.json").is_file()  # written as the command writes it


def test_a_bad_config_raises_the_commands_line_and_leaves_nothing(tmp_path):
    with pytest.raises(rlexp.ConfigError) as typo:
        rlexp.compose(["algo.n_stps=64"])
    cli = rlexp_cli(["algo.n_stps=64", "hydra.run.dir=cli"], cwd=tmp_path)
    assert stderr_lines(cli) == [f"rlexp: error: {typo.value}"]
    with pytest.raises(rlexp.ConfigError, match=r"^n_timesteps=-5: must be > 0"):
        rlexp.train([*FAST, "n_timesteps=-5"], run_dir=tmp_path / "run")
    with pytest.raises(rlexp.ConfigError, match=r"^env=cartpol: no such option \(did you mean cartpole\?\)"):
        rlexp.train(["env=cartpol"], run_dir=tmp_path / "run")
    with pytest.raises(rlexp.ConfigError, match="trains one run"):
        rlexp.train(["hparams=search"], run_dir=tmp_path / "run")
    with pytest.raises(rlexp.ConfigError, match=r"a config returned by rlexp\.compose"):
        rlexp.train(OmegaConf.create({"seed": 1}))
    with pytest.raises(rlexp.ConfigError, match="rlexp evaluate: argument --episodes: 0 must be >= 1"):
        rlexp.load_run(_a_run(tmp_path)).evaluate(episodes=0)
    with pytest.raises(rlexp.ConfigError, match=r"no config\.yaml"):
        rlexp.load_run(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["made"]  # no run dir for a refused run


def _a_run(tmp_path):
    return rlexp.train([*FAST, "callbacks.eval.freq=0"], run_dir=tmp_path / "made").dir


def test_importing_rlexp_loads_no_training_library():
    import subprocess
    import sys

    code = "import sys, rlexp; print(sorted({'hydra', 'torch', 'stable_baselines3'} & set(sys.modules)))"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "[]"


def test_changes_to_a_composed_config_become_overrides():
    from rlexp.api.compose import changes

    before = OmegaConf.create({"a": 1, "b": {"c": "x y", "d": [1, 2]}, "e": None, "gone": 1})
    after = OmegaConf.create({"a": 2, "b": {"c": "it's", "d": [1, "3"]}, "e": 0.5, "new": True})
    assert changes(before, after) == ["a=2", "b.c='it\\'s'", "b.d=[1,'3']", "e=0.5", "+new=true", "~gone"]
    assert json.loads(json.dumps(changes(before, before))) == []


def test_a_latest_link_is_the_run_it_points_to_as_the_command_takes_it(tmp_path, monkeypatch):
    """trained_agent=outputs/<...>/latest names the run dir the link points to now: the new run, which
    re-points latest as it starts, still continues the one meant."""
    run = tmp_path / "outputs" / "ppo-cartpole" / "2026-12-06_08-00-00"
    run.mkdir(parents=True)
    (run.parent / "latest").symlink_to(run.name)
    monkeypatch.chdir(tmp_path)
    cfg = rlexp.compose(["trained_agent=outputs/ppo-cartpole/latest"])
    assert cfg.trained_agent == "outputs/ppo-cartpole/2026-12-06_08-00-00"
