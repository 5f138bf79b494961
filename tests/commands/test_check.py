"""`rlexp check`: the config composed with Hydra's compose API and built as a run's, then the env checks,
through the real command."""

from __future__ import annotations

from conftest import rlexp_cli, stderr_lines

BAD_ENV = """import gymnasium as gym
import numpy as np


class BadEnv(gym.Env):
    \"\"\"Ignores its seed (numpy's global generator), returns a NaN observation at step 30 of an episode;
    with endless=True (its eval kwargs) an episode never ends.\"\"\"

    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, endless=False):
        self.endless, self.t = endless, 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.random.uniform(-1, 1, 2).astype(np.float32), {}

    def step(self, action):
        self.t += 1
        obs = np.full(2, np.nan if self.t == 30 else 0.5, np.float32)
        return obs, 1.0, not self.endless and self.t >= 50, False, {}
"""


def _lines(result) -> dict[str, str]:
    """check's result lines by name: 'ok'/'FAIL' and the text."""
    found = {}
    for line in result.stdout.splitlines():
        status, _, rest = line.strip().partition(" ")
        if status in ("ok", "FAIL"):
            name = rest.strip()[:13].strip()
            found[name] = status
    return found


def test_a_healthy_env_passes_every_check_and_leaves_no_dir(tmp_path):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    # (n_timesteps=1e5: the overrides as the command takes them)
    args = ["check", "--episodes", "5", "--steps", "300", "n_timesteps=1e5"]
    result = rlexp_cli(args, cwd=tmp_path, env={"TMPDIR": str(scratch)})
    assert result.returncode == 0, result.stdout + result.stderr[-2000:]
    assert result.stdout.splitlines()[0] == "rlexp check: PPO on CartPole-v1 (tuned/ppo_cartpole.yaml), seed 0"
    assert set(_lines(result).values()) == {"ok"}
    assert list(_lines(result)) == [
        "config",
        "gymnasium",
        "sb3",
        "seeding",
        "observations",
        "rewards",
        "speed",
        "random policy",
    ]
    assert "over 5 episodes of the eval env" in result.stdout and "95% CI [" in result.stdout
    assert result.stdout.strip().splitlines()[-1] == "rlexp check: all checks passed"
    # no run dir (no outputs/), and none in the temporary dir either (torch keeps its own cache there)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tmp"] and not list(scratch.glob("rlexp-*"))


def test_an_env_that_ignores_its_seed_gives_nan_and_never_ends_fails(tmp_path):
    (tmp_path / "bad_envs.py").write_text(BAD_ENV)
    args = ["check", "--episodes", "2", "--steps", "200", "env.id=bad_envs:BadEnv", "~tuned"]
    result = rlexp_cli([*args, "+env.eval_kwargs.endless=true"], cwd=tmp_path)
    assert result.returncode == 1
    lines = _lines(result)
    failed = {name for name, status in lines.items() if status == "FAIL"}
    assert failed == {"gymnasium", "seeding", "observations", "random policy"}, result.stdout
    assert "did not end within 10000 steps (set env.max_episode_steps)" in result.stdout
    assert result.stdout.strip().splitlines()[-1] == (
        "rlexp check: 4 failed: gymnasium, seeding, observations, random policy"
    )
    # a failed check leaves no run dir either: only the env's module (and Python's cache of it)
    assert {p.name for p in tmp_path.iterdir()} <= {"bad_envs.py", "__pycache__"}


def test_bad_input_to_check_is_one_line(tmp_path):
    for args, expected in [
        (["algo.gamma=2"], "rlexp: error: algo.gamma=2.0: must be in [0, 1]"),
        (["algo.gama=0.9"], "rlexp: error: algo.gama: algo has no such key (did you mean gamma?)"),
        (["env=cartpol"], "rlexp: error: env=cartpol: no such option (did you mean cartpole?); options: "),
        (
            ["-m", "seed=1,2"],
            "rlexp check: error: -m is not an option of check (one config at a time: key=value overrides)",
        ),
    ]:
        result = rlexp_cli(["check", *args], cwd=tmp_path)
        lines = stderr_lines(result)
        assert result.returncode == 1 and len(lines) == 1 and lines[0].startswith(expected), result.stderr
    assert list(tmp_path.iterdir()) == []
