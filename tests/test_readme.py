"""README's examples run as shown: each Usage line (with a small budget) and each Errors line's output."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FAST

README = (Path(__file__).parents[1] / "README.md").read_text()


def _section(title: str) -> str:
    return README.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def _usage_lines() -> list[str]:
    block = next(b for b in _section("Usage").split("\n\n") if b.lstrip("\n").startswith("    rlexp"))
    return [line.strip().split("  #", 1)[0].strip() for line in block.splitlines() if line.strip().startswith("rlexp")]


def _error_examples() -> list[tuple[str, str]]:
    lines = [line.strip() for line in _section("Errors").splitlines() if line.startswith("    ")]
    return [(cmd.removeprefix("$ "), out) for cmd, out in zip(lines[::2], lines[1::2], strict=True)]


def _rlexp(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    exe = shutil.which("rlexp") or str(Path(sys.executable).parent / "rlexp")
    return subprocess.run([exe, *args], cwd=cwd, capture_output=True, text=True, timeout=600)


MY_ENV = """from gymnasium.envs.classic_control import CartPoleEnv


class MyEnv(CartPoleEnv):
    def __init__(self, size: int = 1, **kwargs):
        super().__init__(**kwargs)
        self.size = size
"""


def test_readme_has_the_examples():
    assert len(_usage_lines()) >= 12 and _usage_lines()[0] == "rlexp"
    assert len(_error_examples()) >= 5


# what some Usage lines promise beyond running: line substring -> check of (tmp_path, stdout)
PROMISES = {
    "env.id=Taxi-v4": lambda d, out: (d / "outputs" / "ppo-Taxi-v4").is_dir(),
    "env.id=my_pkg.envs:MyEnv": lambda d, out: (d / "outputs" / "ppo-my_pkg.envs_MyEnv").is_dir(),
    "n_timesteps=1e6": lambda d, out: "n_timesteps: 1000000" in out,
    "--help": lambda d, out: "_schema" not in out and "algo: a2c" in out,
}


# (JAX's start and compilation make the sbx line the longest: in CI's slow run, as tests/test_sbx.py's others)
@pytest.mark.parametrize(
    "line",
    [pytest.param(line, marks=pytest.mark.slow) if "backend=sbx" in line else line for line in _usage_lines()],
)
def test_usage_line_runs_as_shown(line, tmp_path):
    args = shlex.split(line)[1:]
    if "<run>" in line:  # a run to continue: the first example's
        assert _rlexp(FAST, tmp_path).returncode == 0
        (run,) = (tmp_path / "outputs" / "ppo-cartpole").iterdir()
        args = [a.replace("outputs/ppo-cartpole/<run>", str(run.relative_to(tmp_path))) for a in args]
    if "my_pkg" in line:  # the user's own package, in the working directory
        (tmp_path / "my_pkg").mkdir()
        (tmp_path / "my_pkg" / "__init__.py").write_text("")
        (tmp_path / "my_pkg" / "envs.py").write_text(MY_ENV)
    trains = not any(a.startswith("-") for a in args)
    # (MyEnv has no time limit: a balancing agent's evaluation episodes would run on and on)
    capped = ["env.max_episode_steps=200"] if "my_pkg" in line else []
    result = _rlexp([*args, *FAST, *capped] if trains else args, tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    if trains:
        assert result.stdout.strip().splitlines()[-1].startswith("rlexp: run saved to ")
    for shown, promise in PROMISES.items():
        if shown in line:
            assert promise(tmp_path, result.stdout), (line, result.stdout[-2000:])


@pytest.mark.parametrize(("command", "output"), _error_examples())
def test_error_example_prints_what_readme_shows(command, output, tmp_path):
    if "device=cuda" in command:
        import torch

        if torch.cuda.is_available():
            pytest.skip("shows a machine without CUDA")
    result = _rlexp(shlex.split(command)[1:], tmp_path)
    assert result.returncode == 1
    assert result.stderr.strip() == output
    assert list(tmp_path.iterdir()) == []


def _command_lines(section: str) -> list[str]:
    """The commands shown in a section (not their output, whose lines start "rlexp <verb>:")."""
    lines = [line.strip().split("  #", 1)[0].strip() for line in _section(section).splitlines()]
    return [line for line in lines if line.startswith("rlexp ") and not line.split()[1].endswith(":")]


@pytest.mark.slow  # seven commands of several seconds each: in CI's slow run
def test_the_commands_that_read_a_run_run_as_shown(tmp_path):
    lines = _command_lines("Evaluating and watching a run")
    assert [line.split()[1] for line in lines] == ["check", "evaluate", "evaluate", "video", "plot", "-m", "plot"]
    # episodes of at most 50 steps, so that 100 of them take a moment whatever the agent learnt
    assert _rlexp([*FAST, "callbacks.eval.final_episodes=1", "env.max_episode_steps=50"], tmp_path).returncode == 0
    (run,) = (tmp_path / "outputs" / "ppo-cartpole").iterdir()
    for line in lines:
        args = [a.replace("outputs/ppo-cartpole/<run>", str(run.relative_to(tmp_path))) for a in shlex.split(line)[1:]]
        result = _rlexp([*args, *FAST, "curves=true"] if args[0] == "-m" else args, tmp_path)  # -m: trains
        assert result.returncode == 0, (line, result.stderr[-3000:])
    assert (tmp_path / "outputs" / "ppo-cartpole" / "curves.pdf").read_bytes()[:5] == b"%PDF-"
    assert (tmp_path / "multirun" / "seeds" / "curves.png").is_file()
    assert sorted(p.name for p in (run / "eval").iterdir()) == [
        "best_seed10000_n20_envs4.csv",
        "best_seed10000_n20_envs4.json",
        "final_seed10000_n100_envs16.csv",
        "final_seed10000_n100_envs16.json",
    ]
    assert len(list((run / "videos").glob("final_seed10000_return*.gif"))) == 1


@pytest.mark.slow  # ten short trainings and a report: in CI's slow run
def test_the_report_commands_run_as_shown(tmp_path):
    lines = _command_lines("Comparing runs: `rlexp report`")
    assert [line.split()[1] for line in lines] == ["-m", "report"]
    for line in lines:
        args = shlex.split(line)[1:]
        result = _rlexp([*args, *FAST, "env.n_envs=2", "algo.n_steps=32"] if args[0] == "-m" else args, tmp_path)
        assert result.returncode == 0, (line, result.stderr[-3000:])
    report = tmp_path / "multirun" / "ppo_vs_a2c" / "report"
    assert "| algo=ppo | 5 |" in (report / "report.md").read_text()
    assert "normalized IQM" in (report / "report.md").read_text()  # the second command's --target


@pytest.mark.slow  # two short trainings and two exports: in CI's slow run
def test_the_export_commands_run_as_shown(tmp_path):
    lines = _command_lines("Shipping a policy: `rlexp export`")
    assert [line.split()[1] for line in lines] == ["export", "export"]
    sac = ["algo=sac", "env=pendulum", "env.normalize=true", "algo.learning_starts=100"]
    for overrides in (["algo=ppo", "env=cartpole", "algo.n_steps=32"], sac):
        assert _rlexp([*FAST, *overrides], tmp_path).returncode == 0
    runs = {name: next((tmp_path / "outputs" / name).iterdir()) for name in ("ppo-cartpole", "sac-pendulum")}
    for line in lines:
        for name, run in runs.items():
            line = line.replace(f"outputs/{name}/<run>", str(run))
        result = _rlexp(shlex.split(line)[1:], tmp_path)
        assert result.returncode == 0, (line, result.stderr[-3000:])
    assert (runs["ppo-cartpole"] / "export" / "policy.onnx").is_file()
    assert (runs["sac-pendulum"] / "export_best" / "policy.int8.onnx").is_file()


def test_the_python_example_runs_as_shown(tmp_path):
    block = _section("From Python").split("```python\n", 1)[1].split("```", 1)[0]
    assert "n_timesteps=20000" in block
    script = block.replace('"n_timesteps=20000"', '"n_timesteps=512", "callbacks.eval.freq=256"')
    result = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    run = tmp_path / "runs" / "ppo"
    assert "seed=1" in (run / "command.txt").read_text()
    assert (run / "export" / "policy.onnx").is_file() and (tmp_path / "runs" / "report" / "report.md").is_file()
    assert "iqm" in result.stdout.splitlines()[-2] and "CartPole-v1" in result.stdout.splitlines()[-1]


@pytest.mark.slow  # six tracked runs, W&B's and a parallel multirun: in CI's slow run
def test_the_tracker_commands_run_as_shown(tmp_path):
    section = _section("Usage").split("### Experiment trackers: W&B and MLflow\n", 1)[1].split("\n### ", 1)[0]
    lines = [line.strip().split("  #", 1)[0].strip() for line in section.splitlines() if line.startswith("    rlexp")]
    assert len(lines) == 4
    env = {**os.environ, "HOME": str(tmp_path)}  # no W&B key: offline
    env.pop("WANDB_API_KEY", None)
    for line in lines:
        args = shlex.split(line)[1:]
        fast = [a for a in FAST if not a.startswith("logger=")]  # (FAST's logger=csv would replace the tracker's)
        result = subprocess.run(
            [shutil.which("rlexp") or "rlexp", *args, *fast],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert result.returncode == 0, (line, result.stderr[-3000:])
    assert (tmp_path / "mlruns.db").is_file() and len(list((tmp_path / "outputs" / "ppo-cartpole").iterdir())) == 3
