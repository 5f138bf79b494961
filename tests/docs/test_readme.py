"""README's examples run as shown: each Usage line (with a small budget) and each Errors line's output.

(The docs' examples are run by test_docs.py.)"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FAST, rlexp_cli

README = (Path(__file__).parents[2] / "README.md").read_text()


def _section(title: str) -> str:
    return README.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def _usage_lines() -> list[str]:
    block = next(b for b in _section("Usage").split("\n\n") if b.lstrip("\n").startswith("    rlexp"))
    return [line.strip().split("  #", 1)[0].strip() for line in block.splitlines() if line.strip().startswith("rlexp")]


def _error_examples() -> list[tuple[str, str]]:
    lines = [line.strip() for line in _section("Errors").splitlines() if line.startswith("    ")]
    return [(cmd.removeprefix("$ "), out) for cmd, out in zip(lines[::2], lines[1::2], strict=True)]


def _rlexp(args: list[str], cwd: Path, installed: bool = False) -> subprocess.CompletedProcess:
    """`rlexp ARGS`: the installed console script (README's first line, a fresh machine's first command) or
    its entry point forked from the tests' server (tests/forked_rlexp.py), without paying its imports again."""
    if installed:
        exe = shutil.which("rlexp") or str(Path(sys.executable).parent / "rlexp")
        return subprocess.run([exe, *args], cwd=cwd, capture_output=True, text=True, timeout=600)
    return rlexp_cli(args, cwd, timeout=600)


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


# lines that are long to run: in CI's slow run (JAX's start and compilation for sbx, as tests/test_sbx.py's
# others; ALE's Atari env and its CNN, with Gymnasium's vector env or EnvPool's, 20-45 s each)
SLOW_LINES = ("backend=sbx", "env=atari", "env.id=ALE/")


@pytest.mark.parametrize(
    "line",
    [
        pytest.param(line, marks=pytest.mark.slow) if any(s in line for s in SLOW_LINES) else line
        for line in _usage_lines()
    ],
)
def test_usage_line_runs_as_shown(line, tmp_path):
    args = shlex.split(line)[1:]
    if "/latest" in line:  # a run to continue: the first example's
        assert _rlexp(FAST, tmp_path).returncode == 0
    if "my_pkg" in line:  # the user's own package, in the working directory
        (tmp_path / "my_pkg").mkdir()
        (tmp_path / "my_pkg" / "__init__.py").write_text("")
        (tmp_path / "my_pkg" / "envs.py").write_text(MY_ENV)
    trains = not any(a.startswith("-") for a in args)
    # (MyEnv has no time limit: a balancing agent's evaluation episodes would run on and on)
    capped = ["env.max_episode_steps=200"] if "my_pkg" in line else []
    result = _rlexp([*args, *FAST, *capped] if trains else args, tmp_path, installed=line == "rlexp")
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


def test_the_environments_table_is_the_rendering_of_the_families_and_their_tuned_files():
    """README's Environments table is generated (tools/families_table.py): a family, an extra, a note
    (Family.summary) or a tuned file changed without regenerating it fails here."""
    import families_table

    assert families_table.table_in(README) == families_table.readme_table(), (
        "README.md's Environments table is generated from FAMILIES (src/rlexp/config/env_families.py) and "
        "conf/tuned/: run `python tools/families_table.py` and commit README.md"
    )
