"""The installed `rlexp` command as a user runs it: from any directory, and every bad input."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
from conftest import FAST, rlexp_cli, stderr_lines


def test_runs_from_any_directory_and_reports_where_and_how_well(tmp_path):
    result = rlexp_cli([*FAST, "hydra.run.dir=run"], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    last = result.stdout.strip().splitlines()[-1]
    run_dir = (tmp_path / "run").resolve()
    assert last.startswith(f"rlexp: run saved to {run_dir} | final eval ")
    summary = json.loads((run_dir / "summary.json").read_text())
    assert f"{summary['final_eval']['mean']:.2f}" in last
    assert summary["command"] == ["rlexp", *FAST]  # the job's overrides; hydra.* ones are in .hydra/
    assert (run_dir / ".hydra" / "overrides.yaml").is_file()


def test_default_run_dir_is_under_outputs(tmp_path):
    result = rlexp_cli([*FAST, "algo=a2c"], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    (run_dir,) = (tmp_path / "outputs" / "a2c-cartpole").iterdir()
    assert (run_dir / "model.zip").is_file()


def test_help_and_cfg_need_no_training(tmp_path):
    result = rlexp_cli(["--cfg", "job", "algo=sac", "env=pendulum"], cwd=tmp_path)
    assert result.returncode == 0
    assert "tuned_file: sac_pendulum" in result.stdout
    assert not (tmp_path / "outputs").exists()


def test_console_script_is_installed():
    exe = shutil.which("rlexp") or str(__import__("pathlib").Path(sys.executable).parent / "rlexp")
    result = subprocess.run([exe, "--cfg", "job"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and "tuned_file: ppo_cartpole" in result.stdout


# bad input -> (overrides, text the one-line error must contain)
BAD_INPUT = {
    "unknown algo": (["algo=ppo3"], "Could not find 'algo/ppo3'. Available options in 'algo': a2c, ars, crossq, ddpg"),
    "unknown env preset": (["env=cartpol"], "env/cartpol"),
    "unknown gymnasium id": (["env.id=CartPol-v1"], "Did you mean: `CartPole`"),
    "unknown module entry point": (["env.id=nosuchpkg:Foo"], "nosuchpkg"),
    "wrong type": (["algo.n_steps=many"], "algo.n_steps"),
    "unknown key": (["algo.bogus=1"], "bogus"),
    "key the algo does not take": (["algo.buffer_size=100"], "buffer_size"),
    "added key the algo does not take": (["+algo.tau=0.1"], "algo.tau: unknown key for PPOConfig"),
    "discrete-only algo on continuous env": (["algo=dqn", "env=pendulum"], "Box and DQN supports only Discrete"),
    "continuous-only algo on discrete env": (["algo=sac", "env=cartpole"], "Discrete and SAC supports only Box"),
    "zero steps": (["n_timesteps=0"], "n_timesteps must be > 0, got 0"),
    "negative steps": (["n_timesteps=-5"], "n_timesteps must be > 0, got -5"),
    "missing trained agent": (["trained_agent=/no/such/run"], "trained_agent=/no/such/run: no such run dir"),
    "bad wrapper target": (["+env.wrappers.w._target_=no.such.Wrapper"], "no.such.Wrapper"),
    "noise on a discrete env": (["action_noise.kind=normal"], "action_noise.kind=normal needs a continuous"),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUT))
def test_bad_input_gives_one_line_error_and_exit_1(case, tmp_path):
    overrides, expected = BAD_INPUT[case]
    result = rlexp_cli([*FAST, *overrides, "hydra.run.dir=run"], cwd=tmp_path)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    lines = stderr_lines(result)
    assert len(lines) == 1 and lines[0].startswith("rlexp: error: "), result.stderr
    assert expected in lines[0], result.stderr
    assert not (tmp_path / "run" / "model.zip").exists()


def test_full_traceback_with_hydra_full_error(tmp_path):
    result = rlexp_cli(["n_timesteps=0", "hydra.run.dir=run"], cwd=tmp_path, env={"HYDRA_FULL_ERROR": "1"})
    assert result.returncode == 1
    assert "Traceback" in result.stderr and "ConfigError" in result.stderr


@pytest.mark.parametrize("pair", [["algo=dqn", "env=pendulum"], ["algo=td3", "env=cartpole"]])
def test_action_space_mismatch_is_refused_before_any_env_step(pair, tmp_path):
    result = rlexp_cli([*FAST, *pair, "hydra.run.dir=run"], cwd=tmp_path)
    assert result.returncode == 1
    monitors = list((tmp_path / "run" / "monitor").rglob("*.csv"))
    assert monitors  # the train env was built...
    for monitor in monitors:
        assert len(monitor.read_text().splitlines()) == 2  # ...but not stepped: Monitor's header lines only
