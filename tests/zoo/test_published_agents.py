"""RL Zoo's published agents (DLR-RM/rl-trained-agents, saved by SB3 1.x with gym 0.19-0.21) open in rlexp with
gym not installed, their schedules never unpickled, their moved env ids played as the env that replaces them;
a tampered folder is refused in one line and runs nothing. The folders in published_agents/ are that
repository's own files (its MIT licence beside them; published_agents/README.md)."""

from __future__ import annotations

import importlib.util
import json
import os
import pickle
import re
import shlex
import shutil
import sys
import types
from pathlib import Path

import numpy as np
import pytest
from conftest import console_shape, docs_line, rlexp_cli, stderr_lines
from tampered import Payload, tampered_zip

from rlexp.rundir.pickles import pickled_names, restricted_loads

AGENTS = Path(__file__).parent / "published_agents"
GUIDE = Path(__file__).parents[2] / "docs" / "guides" / "evaluate-and-report.md"


def _copy(tmp_path: Path, folder: str) -> Path:
    """A fixture folder copied (the commands write eval/, export/, videos/ into a zoo folder)."""
    dest = tmp_path / folder
    shutil.copytree(AGENTS / folder, dest)
    return dest


def _data_names(zip_path: Path, key: str) -> list[tuple[str, str]]:
    import base64
    import zipfile

    with zipfile.ZipFile(zip_path) as archive:
        blob = json.loads(archive.read("data"))[key][":serialized:"]
    return pickled_names(base64.b64decode(blob))


@pytest.mark.unit
def test_the_fixtures_are_gym_era_and_gym_is_not_here() -> None:
    for zip_path in sorted(AGENTS.glob("*/*/*.zip")):
        assert ("gym.spaces.box", "Box") in _data_names(zip_path, "observation_space"), zip_path
    # their learning rate schedules are functions pickled by cloudpickle under Python 3.7
    names = _data_names(AGENTS / "ppo/CartPole-v1_1/CartPole-v1.zip", "learning_rate")
    assert ("cloudpickle.cloudpickle", "_make_cell") in names
    if importlib.util.find_spec("gym") is not None:
        pytest.skip("gym is installed here: the published agents' tests do not show that they open without it")


# (folder, the line that says the env moved, or None, a check of the scores)
ANT_MOVED = (
    "rlexp: Ant-v3 (the agent's env) no longer builds: playing Ant-v4 with use_contact_forces=True, which alone "
    "gives its 111 observations (Ant-v5 leaves out the world body's); its contact forces (values 27-110) were 0 "
    "throughout training (mujoco-py >= 2: variance 0 in its vecnormalize.pkl), and are played as 0"
)
CASES = {
    "ppo/CartPole-v1_1": (None, lambda r: r["mean"] == 500.0),
    # without playing the contact forces as 0, as in its training, this agent scores about 16
    "ars/Ant-v3_1": (ANT_MOVED, lambda r: r["mean"] > 2000),
    "a2c/LunarLander-v2_1": ("rlexp: LunarLander-v2 (the agent's env) no longer builds", lambda r: r["episodes"] == 3),
    "a2c/HopperBulletEnv-v0_1": (None, lambda r: r["episodes"] == 3),
    "tqc/PandaReach-v1_1": (
        "rlexp: PandaReach-v1 (the agent's env) no longer builds",
        lambda r: r["success_rate"] == 1.0,
    ),
}
# (the default run evaluates one agent of gym's classic control and the one whose env moved by its shape)
DEFAULT = ("ppo/CartPole-v1_1", "ars/Ant-v3_1")


@pytest.mark.parametrize("folder", [pytest.param(f, marks=() if f in DEFAULT else pytest.mark.slow) for f in CASES])
def test_a_published_agent_is_evaluated(folder: str, tmp_path: Path) -> None:
    run = _copy(tmp_path, folder)
    result = rlexp_cli(["evaluate", str(run), "--seed", "0", "--episodes", "3"], tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    moved, check = CASES[folder]
    said = [line for line in result.stdout.splitlines() if "no longer builds" in line]
    assert (len(said) == 1 and said[0].startswith(moved)) if moved else not said, result.stdout
    record = json.loads((run / "eval" / "final_seed0_n3.json").read_text())
    assert check(record), record


@pytest.mark.slow
def test_the_guide_s_example_prints_as_shown(tmp_path: Path) -> None:
    """The evaluate guide's published agent, run on these fixtures as the guide runs it on a checkout."""
    found = re.search(
        r"```bash\n(rlexp evaluate rl-trained-agents/[^\n]+)\n```\n\n```text\n(.*?)\n```", GUIDE.read_text(), re.S
    )
    assert found, "the guide's published agent example"
    command, shown = found.groups()
    shutil.copytree(AGENTS, tmp_path / "rl-trained-agents")
    result = rlexp_cli(shlex.split(command)[1:], tmp_path)
    printed = [line for line in (result.stdout + result.stderr).splitlines() if line.strip()]
    assert [console_shape(line) for line in shown.splitlines()] == [console_shape(line) for line in printed], printed


@pytest.mark.slow
def test_a_folder_laid_out_by_load_from_hub_opens(tmp_path: Path) -> None:
    """rl_zoo3.load_from_hub lays a downloaded agent out as the zoo's log folders (with env_kwargs.yml); with
    --exp-id -1, in the algorithm's folder itself."""
    from rlexp.zoo.log_folders import find_zoo_run

    hub = tmp_path / "hub" / "ppo"
    shutil.copytree(AGENTS / "ppo/CartPole-v1_1", hub)
    (hub / "CartPole-v1" / "env_kwargs.yml").write_text("{}\n")
    result = rlexp_cli(["evaluate", str(hub), "--seed", "0", "--episodes", "2"], tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert json.loads((hub / "eval" / "final_seed0_n2.json").read_text())["mean"] == 500.0
    # beside the algorithm's numbered runs, the folder is theirs (a report reads each of them)
    shutil.copytree(AGENTS / "ppo/CartPole-v1_1", hub / "CartPole-v1_2")
    assert find_zoo_run(hub) is None and find_zoo_run(hub / "CartPole-v1_2") is not None


@pytest.mark.slow
def test_export_video_and_report_of_a_published_agent(tmp_path: Path) -> None:
    run = _copy(tmp_path, "ppo/CartPole-v1_1")
    exported = rlexp_cli(["export", str(run)], tmp_path)
    assert exported.returncode == 0, exported.stderr[-2000:]
    parity = json.loads((run / "export" / "parity.json").read_text())
    assert parity["checks"] and all(check["passed"] for check in parity["checks"].values()), parity
    video = rlexp_cli(["video", str(run), "--episodes", "1"], tmp_path)
    assert video.returncode == 0 and list((run / "videos").glob("*.mp4")), video.stderr[-2000:]
    report = rlexp_cli(["report", str(run), "--out", str(tmp_path / "report")], tmp_path)
    assert report.returncode == 0, report.stderr[-2000:]
    (row,) = json.loads((tmp_path / "report" / "report.json").read_text())["runs"]
    npz = np.load(run / "evaluations.npz")
    assert row["final_eval"] == pytest.approx(float(npz["results"][-1].mean()))


def test_training_continues_from_a_published_agent(tmp_path: Path) -> None:
    run = _copy(tmp_path, "ppo/CartPole-v1_1")
    result = rlexp_cli(["algo=ppo", "env=cartpole", f"trained_agent={run}", "n_timesteps=256"], tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    # (gym 0.19's CartPole bounded its velocities by float32's largest value, gymnasium by inf)
    said = "the agent's observation space bounds with float32's largest value what the env's leaves unbounded"
    assert said in result.stdout + result.stderr
    record = json.loads((tmp_path / "outputs" / "ppo-cartpole" / "latest" / "summary.json").read_text())
    assert record["status"] == "completed" and record["steps_done"] > 100_000  # (the agent's steps, then these)
    # another algorithm's folder: named by its args.yml, before its pickles are read
    other = _copy(tmp_path, "ars/Ant-v3_1")
    result = rlexp_cli(["algo=ppo", "env=cartpole", f"trained_agent={other}", "n_timesteps=256"], tmp_path)
    assert stderr_lines(result) == [
        f"rlexp: error: trained_agent={other} holds a sb3_contrib.ARS agent, not algo=stable_baselines3.PPO"
    ]


@pytest.mark.slow
def test_training_continues_from_an_sb3_0_agent(tmp_path: Path) -> None:
    """SB3 0.x counted SAC's rollouts in episodes (``train_freq=-1, n_episodes_rollout=1``): trained on as that."""
    run = _copy(tmp_path, "sac/Pendulum-v1_1")
    result = rlexp_cli(["algo=sac", "env=pendulum", f"trained_agent={run}", "n_timesteps=200"], tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    record = json.loads((tmp_path / "outputs" / "sac-pendulum" / "latest" / "summary.json").read_text())
    assert record["status"] == "completed" and record["steps_done"] == 20_200


def test_an_agent_is_not_played_in_an_env_of_other_spaces(tmp_path: Path) -> None:
    run = _copy(tmp_path, "ppo/CartPole-v1_1")
    args = run / "CartPole-v1" / "args.yml"
    args.write_text(args.read_text().replace("- CartPole-v1\n", "- Acrobot-v1\n"))
    result = rlexp_cli(["evaluate", str(run), "--episodes", "1"], tmp_path)
    assert result.returncode == 1 and not (run / "eval").exists()
    assert stderr_lines(result) == [
        f"rlexp evaluate: error: {run / 'CartPole-v1.zip'}: the agent observes Box(4,), but Acrobot-v1 here gives "
        "Box(6,): not played"
    ]


def test_the_python_api_opens_a_published_agent() -> None:
    import rlexp

    model = rlexp.load_run(AGENTS / "ppo/CartPole-v1_1").load_agent()
    action, _ = model.predict(model.get_env().reset(), deterministic=True)
    assert model.observation_space == model.get_env().observation_space and action.shape == (1,)


class _CalledOnLoad:
    """Unpickling it calls ``function`` (pickled by cloudpickle, by value)."""

    def __init__(self, function: object) -> None:
        self.function = function

    def __reduce__(self):
        return (self.function, ())


def _lambda_pickle(marker: Path, through_module: bool) -> bytes:
    """A schedule's entry that touches ``marker`` as it is unpickled: through the os module (which cloudpickle
    pickles by name, importing it on load) or through a builtin (its pickle names only cloudpickle's parts)."""
    import cloudpickle

    command = f"touch {marker}"
    if through_module:
        return cloudpickle.dumps(_CalledOnLoad(lambda: os.system(command)))
    return cloudpickle.dumps(_CalledOnLoad(eval(f"lambda: __import__('os').system('touch {marker}')")))


def test_a_tampered_published_agent_is_refused_in_one_line_and_runs_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    cases = [
        ("observation_space", pickle.dumps(Payload(marker)), "its pickle names posix.system"),
        ("policy_class", pickle.dumps(Payload(marker)), "its pickle names posix.system"),
        ("learning_rate", _lambda_pickle(marker, through_module=True), "a pickled function that names"),
    ]
    for key, payload, said in cases:
        run = _copy(tmp_path / key, "ppo/CartPole-v1_1")
        tampered_zip(run / "CartPole-v1.zip", key, payload)
        result = rlexp_cli(["evaluate", str(run), "--episodes", "1"], tmp_path)
        assert result.returncode == 1 and not marker.exists(), result.stdout + result.stderr
        (line,) = stderr_lines(result)
        assert line.startswith(f"rlexp evaluate: error: {run / 'CartPole-v1.zip'} ({key}): ") and said in line, line
        if key == "learning_rate":  # (as the security guide shows it)
            shown = docs_line("guides/security.md", "    rlexp evaluate: error: rl-trained-agents/ppo/").strip()
            assert console_shape(line.replace(str(tmp_path / key) + "/", "rl-trained-agents/")) == console_shape(shown)
    # its VecNormalize statistics
    run = _copy(tmp_path / "vecnormalize", "ars/Ant-v3_1")
    (run / "Ant-v3" / "vecnormalize.pkl").write_bytes(pickle.dumps(Payload(marker)))
    result = rlexp_cli(["evaluate", str(run), "--episodes", "1"], tmp_path)
    assert result.returncode == 1 and not marker.exists()
    (line,) = stderr_lines(result)
    assert "vecnormalize.pkl: its pickle names posix.system, which is not on rlexp's allow-list" in line, line


def test_a_schedule_s_code_is_never_unpickled(tmp_path: Path) -> None:
    """A schedule whose pickle names only cloudpickle's parts is code all the same: replaced by the one the
    config builds, never unpickled nor called (the agent plays, nothing is touched)."""
    marker = tmp_path / "pwned"
    run = _copy(tmp_path, "ppo/CartPole-v1_1")
    for key in ("learning_rate", "lr_schedule", "clip_range"):
        tampered_zip(run / "CartPole-v1.zip", key, _lambda_pickle(marker, through_module=False))
    result = rlexp_cli(["evaluate", str(run), "--episodes", "1"], tmp_path)
    assert result.returncode == 0 and not marker.exists(), result.stderr[-2000:]
    # and training on from it builds the schedules from the config, as a new run of it does
    result = rlexp_cli(["algo=ppo", "env=cartpole", f"trained_agent={run}", "n_timesteps=256"], tmp_path)
    assert result.returncode == 0 and not marker.exists(), result.stderr[-2000:]


@pytest.mark.unit
def test_gym_s_legacy_space_states_read_as_gymnasium_s() -> None:
    from gymnasium import spaces

    legacy = np.random.RandomState(0)  # (gym <= 0.21's generator, which gymnasium cannot sample with)
    # gym < 0.21: "shape" and "np_random", no "start" (gymnasium's own MultiDiscrete fails on this state)
    state = {"nvec": np.array([3, 4]), "shape": (2,), "dtype": np.dtype("int64"), "np_random": legacy}
    multi = restricted_loads(_gym_pickle_reconstructed("gym.spaces.multi_discrete", "MultiDiscrete", state), "m")
    assert type(multi) is spaces.MultiDiscrete and multi == spaces.MultiDiscrete([3, 4])
    assert multi.contains(multi.sample())
    ones = np.ones(3, bool)
    state = {"low": np.zeros(3, np.float32), "high": np.ones(3, np.float32), "shape": (3,), "np_random": legacy,
             "dtype": np.dtype("float32"), "bounded_below": ones, "bounded_above": ones}  # fmt: skip
    box = restricted_loads(_gym_pickle_reconstructed("gym.spaces.box", "Box", state), "box")
    assert type(box) is spaces.Box and box == spaces.Box(0, 1, (3,), np.float32) and box.contains(box.sample())
    state = {"n": 5, "shape": (), "dtype": np.dtype("int64"), "np_random": legacy}
    discrete = restricted_loads(_gym_pickle_reconstructed("gym.spaces.discrete", "Discrete", state), "discrete")
    assert discrete == spaces.Discrete(5) and discrete.contains(discrete.sample())


def _gym_pickle_reconstructed(module: str, name: str, state: dict) -> bytes:
    """As gym's spaces pickle (protocol 2: the class by gym's module, then its __dict__ as state)."""
    fake = types.ModuleType(module)
    cls = type(name, (), {"__module__": module})
    setattr(fake, name, cls)
    added = {"gym": types.ModuleType("gym"), "gym.spaces": types.ModuleType("gym.spaces"), module: fake}
    sys.modules.update(added)
    try:
        obj = cls()
        obj.__dict__.update(state)
        data = pickle.dumps(obj, protocol=2)
    finally:
        for added_name in added:
            del sys.modules[added_name]
    assert (module, name) in pickled_names(data)
    return data


@pytest.mark.unit
def test_the_table_lists_each_agent_with_its_reason_and_readme_says_what_it_measured() -> None:
    """benchmarks/zoo_agents.json (benchmarks/zoo_agents.py over a checkout of that repository): every agent
    opened and scored, or listed with why not; an agent far from its published score says why; README's line
    and the docs page are made from it (docs/hooks/benchmark_pages.py)."""
    sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))
    try:
        import zoo_agents
    finally:
        sys.path.pop(0)
    record = json.loads(zoo_agents.RESULTS.read_text())
    rows = record["rows"]
    assert len({r["folder"] for r in rows}) == len(rows) > 150  # (every folder of that repository)
    for row in rows:
        assert row["verdict"] in ("near", "far", "no published score", "not opened", "not in checkout"), row
        if row["verdict"] in ("far", "not opened", "not in checkout"):
            assert row.get("why"), row
        if "mean" in row:
            assert len(row["returns"]) == record["episodes"] and row["played"], row
    readme = " ".join((Path(__file__).parents[2] / "README.md").read_text().split())
    assert zoo_agents.summary(rows) in readme
    assert "| agent | env played |" in zoo_agents.page(record)
