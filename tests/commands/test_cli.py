"""The installed `rlexp` command as a user runs it: from any directory, and every bad input."""

from __future__ import annotations

import importlib.metadata
import json
import os
import pstats
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FAST, rlexp_cli, stderr_lines, train

from rlexp.config.algorithms import ALGORITHMS


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
    (run_dir,) = (p for p in (tmp_path / "outputs" / "a2c-cartpole").iterdir() if p.name != "latest")
    assert (run_dir / "model.zip").is_file()


def test_help_and_cfg_need_no_training(tmp_path):
    result = rlexp_cli(["--cfg", "job", "algo=sac", "env=pendulum"], cwd=tmp_path)
    assert result.returncode == 0
    assert "tuned_file: sac_pendulum" in result.stdout
    assert not (tmp_path / "outputs").exists()


# an env.id the zoo tunes is routed to its preset (env=acrobot): the preset and Hydra's flags anywhere on a line
@pytest.mark.parametrize("at", [0, 1, 2])
@pytest.mark.parametrize("env", [["env=acrobot"], ["env.id=Acrobot-v1"]])
def test_a_flag_goes_anywhere_on_the_line(at, env, tmp_path):
    words = ["algo=ppo", *env]
    result = rlexp_cli([*words[:at], "--cfg", "job", *words[at:]], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "tuned_file: ppo_acrobot" in result.stdout and "id: Acrobot-v1" in result.stdout


@pytest.mark.slow
def test_a_multirun_flag_at_the_end_and_a_verb_flag_between_runs(tmp_path):
    result = rlexp_cli(
        ["algo=ppo", "env.id=Acrobot-v1", "seed=0,1", *FAST, "hydra.sweep.dir=sweep", "-m"], cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr[-2000:]
    runs = [str(tmp_path / "sweep" / job) for job in ("0", "1")]
    assert all(json.loads((Path(run) / "summary.json").read_text())["env_id"] == "Acrobot-v1" for run in runs)
    result = rlexp_cli(["plot", runs[0], "--output", "both.png", runs[1]], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "both.png").is_file()


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["env.id=Acrobot-v1", "-c"], "rlexp: error: -c takes a value (job, hydra, all)"),
        (["algo=ppo", "--mulitrun"], "rlexp: error: unrecognized argument --mulitrun (did you mean --multirun?): "),
    ],
)
def test_a_flag_without_its_value_or_misspelt_is_one_line(args, line, tmp_path):
    result = rlexp_cli(args, cwd=tmp_path)
    assert result.returncode == 1 and len(stderr_lines(result)) == 1 and stderr_lines(result)[0].startswith(line)


def test_two_modes_of_hydra_are_one_line(tmp_path):
    result = rlexp_cli(["-m", "algo=ppo", "--cfg", "job"], cwd=tmp_path)
    assert result.returncode == 1 and stderr_lines(result) == [
        "rlexp: error: -m and --cfg: only one of --run, --multirun, --cfg, --info and --shell-completion at a time"
    ]


def test_console_script_is_installed():
    (script,) = [e for e in importlib.metadata.entry_points(group="console_scripts") if e.name == "rlexp"]
    assert script.value == "rlexp.__main__:console"  # (Ctrl-C while it loads; the exit without teardown)
    exe = shutil.which("rlexp") or str(__import__("pathlib").Path(sys.executable).parent / "rlexp")
    result = subprocess.run([exe, "--cfg", "job"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and "tuned_file: ppo_cartpole" in result.stdout


@pytest.mark.parametrize(("args", "status"), [(["--cfg", "job"], 0), (["algo.bogus=1"], 1)])
def test_the_command_skips_the_teardown_but_not_what_an_exit_does(args, status, tmp_path):
    """console() ends the process without freeing every object (no __del__ at the end), yet as Python's exit
    would: threads finish (a thread pool never shut down too), atexit handlers run, output still buffered
    is written and the exit status is kept."""
    program = (
        "import atexit, sys, threading, time\n"
        "from concurrent.futures import ThreadPoolExecutor\n"
        "class Kept:\n"
        "    def __del__(self, open=open): open('torn-down', 'w').write('freed')\n"
        "kept = Kept()\n"
        "atexit.register(lambda: open('atexit-ran', 'w').write('ran'))\n"
        "threading.Thread(target=lambda: (time.sleep(0.5), open('thread-done', 'w').write('done'))).start()\n"
        "ThreadPoolExecutor(1).submit(print, 'pool ', end='')\n"
        "sys.stdout.write('buffered ')\n"
        "from rlexp.cli import console\n"
        "sys.argv[0] = 'rlexp'\n"
        "console()\n"
    )
    buffered = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # as a pipe is by default
    result = subprocess.run(
        [sys.executable, "-c", program, *args], cwd=tmp_path, env=buffered, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == status, result.stderr
    assert "buffered " in result.stdout and "pool " in result.stdout
    assert ("tuned_file: ppo_cartpole" in result.stdout) == (status == 0)
    if status:  # the one-line error
        assert len(stderr_lines(result)) == 1 and "bogus" in result.stderr
    assert (tmp_path / "atexit-ran").read_text() == "ran"
    assert (tmp_path / "thread-done").read_text() == "done"
    assert not (tmp_path / "torn-down").exists()  # the interpreter's objects were not freed one by one


def test_under_a_profiler_the_command_exits_as_python_does(tmp_path):
    """cProfile, coverage and pdb save what they found in Python's own exit, which console() then keeps."""
    result = subprocess.run(
        [sys.executable, "-m", "cProfile", "-o", "rlexp.prof", "-m", "rlexp", "--cfg", "job"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert pstats.Stats(str(tmp_path / "rlexp.prof")).total_calls > 0


# the algorithms as Hydra lists a group's options: sorted, comma-separated
ALGO_OPTIONS = ", ".join(sorted(a.name for a in ALGORITHMS))
# bad input -> (overrides, text the one-line error must contain); README's Errors examples (an unknown
# algo, a misspelt key, env id or tuned file, DQN on Pendulum, an unknown policy, gamma 1.5, CUDA) are
# run as shown, output and all, by tests/test_readme.py
BAD_INPUT = {
    "schema is not an option": (["algo=ppo_schema"], f"algo=ppo_schema: no such option; options: {ALGO_OPTIONS}"),
    "unknown env preset": (["env=cartpol"], "env=cartpol: no such option (did you mean cartpole?); options: 5"),
    "a preset with another name": (["schedule@lr_schedule=cosin"], "schedule=cosin: no such option (did you mean co"),
    "a key of a dict the config leaves empty": (["env.kwargs.max_speed=2"], "+env.kwargs.max_speed=<value>"),
    "unknown module entry point": (["env.id=nosuchpkg:Foo"], "nosuchpkg"),
    "wrong type": (["algo.n_steps=many"], "algo.n_steps"),
    "unknown key": (["algo.bogus=1"], "bogus"),
    "misspelt algo key": (["algo.n_stps=64"], "(did you mean n_steps?)"),
    "misspelt added key": (["+env.n_env=2"], "env.n_env: unknown key for EnvConfig (did you mean n_envs?)"),
    "key the algo does not take": (["algo.buffer_size=100"], "buffer_size"),
    "added key the algo does not take": (["+algo.tau=0.1"], "algo.tau: unknown key for PPOConfig"),
    "continuous-only algo on discrete env": (["algo=sac", "env=cartpole"], "Discrete and SAC supports only Box"),
    "zero steps": (["n_timesteps=0"], "n_timesteps=0: must be > 0"),
    "negative steps": (["n_timesteps=-5"], "n_timesteps=-5: must be > 0"),
    "missing trained agent": (["trained_agent=/no/such/run"], "trained_agent=/no/such/run: no such run dir"),
    "bad wrapper target": (["+env.wrappers.w._target_=no.such.Wrapper"], "env.wrappers.w: "),
    "noise on a discrete env": (["action_noise.kind=normal"], "action_noise.kind=normal needs a continuous"),
    # the list: things that only SB3, torch or Gymnasium would have noticed
    "unknown device": (["device=tpu"], "device=tpu: not a device; choose auto, cpu, cuda, cuda:N or mps"),
    "bad net_arch": (
        ["+algo.policy_kwargs.net_arch=abc"],
        "algo.policy_kwargs.net_arch='abc': takes a list of layer sizes",
    ),
    "unknown policy kwarg": (["+algo.policy_kwargs.nosuch=1"], "unexpected keyword argument 'nosuch'"),
    "unknown env kwarg": (["+env.kwargs.nosuch=1"], "env.kwargs.nosuch: CartPole-v1 cannot be made"),
    "negative frame stack": (["env.frame_stack=-1"], "env.frame_stack=-1: must be >= 0"),
    "zero n_steps": (["algo.n_steps=0"], "algo.n_steps=0: must be > 0"),
    "negative Q check period": (["diagnostics.q_every=-5"], "diagnostics.q_every=-5: must be > 0"),
    "entropy floor above 1": (["diagnostics.entropy_floor=2"], "diagnostics.entropy_floor=2.0: must be in [0, 1]"),
    "tau above 1": (["algo=sac", "env=pendulum", "algo.tau=2"], "algo.tau=2.0: must be in [0, 1]"),
    "empty replay buffer": (["algo=sac", "env=pendulum", "algo.buffer_size=0"], "algo.buffer_size=0: must be > 0"),
    "negative episode limit": (["env.max_episode_steps=-1"], "env.max_episode_steps=-1: must be > 0"),
    "missing tuned file": (["tuned=doesnotexist"], "tuned=doesnotexist: no such tuned file (for ppo: ppo_acrobot,"),
    "negative learning rate": (["algo.learning_rate=-1"], "algo.learning_rate=-1.0: must be > 0"),
    "bad schedule": (["schedule@lr_schedule=exponential", "lr_schedule.decay=3"], "decay must be in (0, 1], got 3"),
    "bad normalize kwargs": (
        ["env.normalize=true", "+env.normalize_kwargs.nosuch=1"],
        "env.normalize_kwargs: TypeError",
    ),
    "stop when solved without a threshold": (
        ["algo=sac", "env=pendulum", "env.reward_threshold=null", "callbacks.stop=solved"],
        "callbacks.stop=solved: Pendulum-v1 has no reward_threshold in its Gymnasium spec; give the reward to "
        "reach: callbacks.stop=<reward> (or env.reward_threshold=<reward>)",
    ),
    "stop on nonsense": (["callbacks.stop=banana"], "callbacks.stop=banana: expected solved, a reward (a number)"),
    "stop without evaluations": (
        ["callbacks.stop.reward_threshold=400", "callbacks.eval.freq=0"],
        "callbacks.stop ends training after a periodic evaluation, and callbacks.eval.freq=0 turns them off",
    ),
    "misspelt stop key": (["callbacks.stop.reward_treshold=400"], "reward_treshold"),
    "clip schedule without clip range": (
        ["algo=a2c", "schedule@clip_range_schedule=linear"],
        "clip_range_schedule: algo=",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUT))
def test_bad_input_gives_one_line_error_exit_1_and_no_run_dir(case, tmp_path):
    overrides, expected = BAD_INPUT[case]
    result = rlexp_cli([*FAST, *overrides, "hydra.run.dir=out/run"], cwd=tmp_path)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    lines = stderr_lines(result)
    assert len(lines) == 1 and lines[0].startswith("rlexp: error: "), result.stderr
    assert expected in lines[0], result.stderr
    assert list(tmp_path.iterdir()) == []  # not even Hydra's .hydra/ or the job log


def test_a_refused_command_leaves_an_existing_dir_as_it_was(tmp_path):
    kept = tmp_path / "mine"
    kept.mkdir()
    (kept / "notes.txt").write_text("mine")
    result = rlexp_cli([*FAST, "device=tpu", f"hydra.run.dir={kept}"], cwd=tmp_path)
    assert result.returncode == 1
    assert [p.name for p in kept.iterdir()] == ["notes.txt"]


def test_the_default_run_dir_is_not_created_for_a_refused_command(tmp_path):
    result = rlexp_cli([*FAST, "algo.gamma=2"], cwd=tmp_path)
    assert result.returncode == 1
    assert not (tmp_path / "outputs").exists()


def test_whole_floats_are_accepted_for_counts(tmp_path):
    result = rlexp_cli(["n_timesteps=1e6", "algo.n_steps=6.4e1", "--cfg", "job"], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "n_timesteps: 1000000" in result.stdout and "n_steps: 64" in result.stdout
    result = rlexp_cli(["n_timesteps=1.5", "--cfg", "job"], cwd=tmp_path)  # not whole: still refused
    assert result.returncode == 1 and "n_timesteps" in result.stderr
    result = rlexp_cli(["seed=9007199254740993", "algo.learning_rate=1e3", "--cfg", "job"], cwd=tmp_path)
    assert "seed: 9007199254740993" in result.stdout  # integers as written, floats left alone
    assert "learning_rate: 1000.0" in result.stdout


def test_help_lists_real_options_only(tmp_path):
    result = rlexp_cli(["--help"], cwd=tmp_path)
    assert result.returncode == 0
    assert "_schema" not in result.stdout
    assert f"algo: {ALGO_OPTIONS}" in result.stdout
    assert "declarative reinforcement-learning experiments" in result.stdout and "README" in result.stdout
    from rlexp.commands import VERBS

    assert all(f"rlexp {verb} " in result.stdout for verb in VERBS)  # every command, with its arguments
    # each file it points to is there
    root = Path(__file__).resolve().parents[2]
    named = re.findall(r"\b((?:docs/[\w/.-]+\.md)|README\.md|noxfile\.py)", result.stdout)
    assert named and all((root / name).is_file() for name in named), named


def test_warnings_and_device_are_recorded(tmp_path):
    result = rlexp_cli(
        [*FAST, "algo=sac", "env=pendulum", "algo.learning_starts=1000", "hydra.run.dir=run"], cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert "tuned hyperparameters: tuned/sac_pendulum.yaml" in result.stdout + result.stderr
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["device"] == "cpu"
    (warning,) = summary["warnings"]
    assert warning.startswith("algo.learning_starts=1000 >= n_timesteps=256")
    continued = rlexp_cli(
        [*FAST, "algo=sac", "env=pendulum", "algo.learning_starts=64", "trained_agent=run", "hydra.run.dir=more"],
        cwd=tmp_path,
    )
    assert continued.returncode == 0, continued.stderr
    (warning,) = json.loads((tmp_path / "more" / "summary.json").read_text())["warnings"]
    assert "brings no replay buffer" in warning


def test_a_librarys_warning_is_said_once_recorded_logged_and_repeated_at_the_end(tmp_path):
    # SB3 warns that 100 does not divide PPO's rollout of 8 x 32 steps: the front door's probe model first
    result = rlexp_cli([*FAST, "algo.batch_size=100", "hydra.run.dir=run"], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    (warning,) = json.loads((tmp_path / "run" / "summary.json").read_text())["warnings"]
    assert warning.startswith("You have specified a mini-batch size of 100") and warning.endswith(
        "(UserWarning, stable_baselines3.ppo.ppo)"
    )
    said = [line for line in (result.stdout + result.stderr).splitlines() if line == f"rlexp: warning: {warning}"]
    assert len(said) == 2  # at the start, and above the last lines
    assert result.stderr.splitlines()[-1] == f"rlexp: warning: {warning}"  # (warnings on stderr)
    assert warning in (tmp_path / "run" / "rlexp.log").read_text()


def test_a_trained_agent_for_other_spaces_is_refused(tmp_path):
    short = "env.max_episode_steps=20"  # (the spaces matter here, not how well it learns)
    train([*FAST, "algo=ppo", "env=pendulum", "env.normalize=true", short], tmp_path / "pend")  # (in-process: quicker)
    result = rlexp_cli([*FAST, "env.normalize=true", "trained_agent=pend", "hydra.run.dir=run"], cwd=tmp_path)
    assert result.returncode == 1
    (line,) = stderr_lines(result)
    assert "trained_agent=pend was trained on the observation space Box(3,), but env.id=CartPole-v1 has Box(4,)" in line
    assert not (tmp_path / "run").exists()


def test_a_custom_env_id_names_the_run_dir_and_resolves_from_the_working_directory(tmp_path):
    package = tmp_path / "my_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "envs.py").write_text(
        "from gymnasium.envs.classic_control import CartPoleEnv\n\n"
        "class MyEnv(CartPoleEnv):\n    def __init__(self, size=1, **kwargs):\n        super().__init__(**kwargs)\n"
    )
    exe = shutil.which("rlexp") or str(Path(sys.executable).parent / "rlexp")
    result = subprocess.run(
        [exe, *FAST, "env.id=my_pkg.envs:MyEnv", "+env.kwargs.size=5", "~tuned", "env.max_episode_steps=200"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
    )
    assert result.returncode == 0, result.stderr
    (run_dir,) = (p for p in (tmp_path / "outputs" / "ppo-my_pkg.envs_MyEnv").iterdir() if p.name != "latest")
    assert (run_dir / "model.zip").is_file()


def test_full_traceback_with_hydra_full_error(tmp_path):
    result = rlexp_cli(["n_timesteps=0", "hydra.run.dir=run"], cwd=tmp_path, env={"HYDRA_FULL_ERROR": "1"})
    assert result.returncode == 1
    assert "Traceback" in result.stderr and "ConfigError" in result.stderr


@pytest.mark.parametrize("pair", [["algo=dqn", "env=pendulum"], ["algo=td3", "env=cartpole"]])
def test_action_space_mismatch_is_refused_before_any_env_step(pair, tmp_path):
    result = rlexp_cli([*FAST, *pair, "hydra.run.dir=run"], cwd=tmp_path)
    assert result.returncode == 1
    assert not (tmp_path / "run").exists()


def test_a_multirun_with_bad_input_writes_no_sweep_dir(tmp_path):
    result = rlexp_cli(["-m", "seed=0,1", *FAST, "algo.gamma=2", "hydra.sweep.dir=sweep"], cwd=tmp_path)
    assert result.returncode == 1
    assert stderr_lines(result) == ["rlexp: error: algo.gamma=2.0: must be in [0, 1]"]
    assert list(tmp_path.iterdir()) == []


def test_a_refused_job_of_a_multirun_leaves_no_job_dir(tmp_path):
    args = ["-m", "algo=sac", "env=pendulum,cartpole", *FAST, "algo.learning_starts=64", "hydra.sweep.dir=sweep"]
    result = rlexp_cli(args, cwd=tmp_path)
    assert result.returncode == 1
    assert "Discrete and SAC supports only Box" in stderr_lines(result)[-1]
    assert sorted(p.name for p in (tmp_path / "sweep").iterdir()) == ["0", "multirun.yaml"]
    assert (tmp_path / "sweep" / "0" / "model.zip").is_file()


CALLBACK = """from stable_baselines3.common.callbacks import BaseCallback

from rlexp.errors import ConfigError


class FailsLater(BaseCallback):
    def _on_step(self):
        if self.num_timesteps >= 64:
            raise ConfigError("my_callbacks.FailsLater: threshold reached")
        return True
"""


def test_a_failure_after_the_run_started_keeps_its_run_dir(tmp_path):
    (tmp_path / "my_callbacks.py").write_text(CALLBACK)
    args = [*FAST, "+callbacks.extra.fail._target_=my_callbacks.FailsLater", "hydra.run.dir=run"]
    result = rlexp_cli(args, cwd=tmp_path)
    assert result.returncode == 1
    assert stderr_lines(result)[-1] == "rlexp: error: my_callbacks.FailsLater: threshold reached"
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["status"] == "failed" and "threshold reached" in summary["error"]
    assert (tmp_path / "run" / "logs" / "progress.csv").is_file()


def test_a_bad_user_callback_is_refused_before_the_run(tmp_path):
    result = rlexp_cli(
        [*FAST, "+callbacks.extra.x._target_=collections.OrderedDict", "hydra.run.dir=run"], cwd=tmp_path
    )
    assert result.returncode == 1
    assert "callbacks.extra.x: needs a _target_ naming an SB3 BaseCallback class" in stderr_lines(result)[0]
    assert list(tmp_path.iterdir()) == []


def test_a_tuned_file_of_ones_own_is_accepted(tmp_path):
    (tmp_path / "conf" / "tuned").mkdir(parents=True)
    (tmp_path / "conf" / "tuned" / "mine.yaml").write_text("# @package _global_\nalgo:\n  n_steps: 64\n")
    args = [*FAST, f"hydra.searchpath=[file://{tmp_path / 'conf'}]", "tuned=mine", "hydra.run.dir=run"]
    result = rlexp_cli(args, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "n_steps: 64" in (tmp_path / "run" / "config.yaml").read_text()


def test_a_multirun_leaves_the_device_to_its_jobs(tmp_path):
    """A GPU job may be submitted from a CPU login node: the device is checked where the job runs."""
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    result = rlexp_cli(["-m", "seed=0", *FAST, "device=cuda", "hydra.sweep.dir=sweep"], cwd=tmp_path)
    assert result.returncode == 1
    assert stderr_lines(result)[-1] == "rlexp: error: device=cuda: not available on this machine (present: cpu)"
    assert not (tmp_path / "sweep").exists()  # the job refused: its dir gone, and the sweep's that held only it
