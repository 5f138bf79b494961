"""Each env family RL Zoo tunes, picked by the zoo's env id through the real `rlexp` command: it builds
with the family's preprocessing, trains one rollout with the tuned values, saves an agent that SB3 loads."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest
from conftest import rlexp_cli

from rlexp.config.env_families import BY_NAME

QUICK = [
    "callbacks.eval.freq=0",
    "callbacks.eval.final_episodes=1",
    "random_baseline.episodes=0",
    "logger=csv",
    "logger.verbose=1",  # (the start lines)
    "curves=false",
]


def _installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def _trained(args: list[str], tmp_path: Path) -> tuple[dict, str]:
    run = tmp_path / "run"
    result = rlexp_cli([*args, *QUICK, f"hydra.run.dir={run}"], tmp_path, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads((run / "summary.json").read_text()), result.stdout + result.stderr


def _loads(run: Path, algo_class: type) -> object:
    return algo_class.load(run / "model.zip", device="cpu")


@pytest.mark.skipif(not _installed("ale_py"), reason="needs rlexp[atari]")
@pytest.mark.parametrize("game", ["ALE/Breakout-v5", "BreakoutNoFrameskip-v4"])
def test_any_atari_id_trains_a_cnn_on_84x84x4_frames(game: str, tmp_path: Path) -> None:
    from stable_baselines3 import PPO

    summary, stderr = _trained(
        ["algo=ppo", f"env.id={game}", "n_timesteps=256", "env.n_envs=2", "algo.n_steps=128", "algo.batch_size=64"],
        tmp_path,
    )
    assert summary["tuned_file"] == "ppo_atari" and "tuned/ppo_atari.yaml" in stderr
    model = _loads(tmp_path / "run", PPO)
    assert model.observation_space.shape == (4, 84, 84)  # channels first: 4 stacked 84x84 grey frames
    assert type(model.policy.features_extractor).__name__ == "NatureCNN"


@pytest.mark.skipif(not _installed("mujoco"), reason="needs rlexp[mujoco]")
@pytest.mark.parametrize("env_id", ["Hopper-v4", "Hopper-v5"])
def test_the_zoos_mujoco_id_gets_the_zoos_sac_values(env_id: str, tmp_path: Path) -> None:
    from stable_baselines3 import SAC

    args = ["algo=sac", f"env.id={env_id}", "n_timesteps=200", "algo.learning_starts=100", "algo.buffer_size=1000"]
    summary, _ = _trained(args, tmp_path)
    assert summary["tuned_file"] == "sac_hopper"
    config = (tmp_path / "run" / "config.yaml").read_text()
    assert f"id: {env_id}" in config and "tuned_source: rl-zoo3 2.9.2 sac.yml Hopper-v4" in config
    assert _loads(tmp_path / "run", SAC).observation_space.shape == (11,)


@pytest.mark.skipif(not _installed("mujoco"), reason="needs rlexp[mujoco]")
def test_an_id_gymnasium_no_longer_builds_trains_the_current_one_and_says_so(tmp_path: Path) -> None:
    args = ["algo=ppo", "env.id=Reacher-v2", "n_timesteps=128", "algo.n_steps=64", "algo.batch_size=64"]
    summary, stderr = _trained(args, tmp_path)
    assert "env.id=Reacher-v2 (RL Zoo's id) is no longer built" in stderr and "training Reacher-v5" in stderr
    assert summary["tuned_file"] == "ppo_reacher" and "id: Reacher-v5" in (tmp_path / "run" / "config.yaml").read_text()


@pytest.mark.skipif(not _installed("minigrid"), reason="needs rlexp[minigrid]")
def test_minigrid_gets_flat_observations_and_says_when_a_pair_has_no_tuned_values(tmp_path: Path) -> None:
    from stable_baselines3 import DQN

    args = ["algo=dqn", "env.id=MiniGrid-DoorKey-5x5-v0", "n_timesteps=200", "algo.learning_starts=100"]
    summary, stderr = _trained(args, tmp_path)
    assert "no tuned values for dqn on MiniGrid-DoorKey-5x5-v0: SB3 defaults" in stderr
    assert summary["tuned_file"] is None
    assert _loads(tmp_path / "run", DQN).observation_space.shape == (2835,)  # FlatObsWrapper's vector


@pytest.mark.skipif(not _installed("minigrid"), reason="needs rlexp[minigrid]")
def test_minigrid_ppo_gets_the_zoos_values(tmp_path: Path) -> None:
    args = ["algo=ppo", "env.id=MiniGrid-DoorKey-5x5-v0", "n_timesteps=256", "env.n_envs=2", "algo.n_steps=128"]
    summary, _ = _trained(args, tmp_path)
    assert summary["tuned_file"] == "ppo_minigrid_doorkey_5x5"
    assert (tmp_path / "run" / "vecnormalize.pkl").is_file()  # the zoo normalizes MiniGrid's observations


@pytest.mark.skipif(not _installed("panda_gym"), reason="needs rlexp[panda]")
def test_panda_gym_trains_tqc_with_her(tmp_path: Path) -> None:
    from sb3_contrib import TQC

    args = ["algo=tqc", "env.id=PandaReach-v1", "n_timesteps=200", "algo.learning_starts=100", "algo.batch_size=32"]
    summary, stderr = _trained(args, tmp_path)
    assert summary["tuned_file"] == "tqc_pandareach" and "training PandaReach-v3" in stderr
    from stable_baselines3.common.save_util import load_from_zip_file

    data, _, _ = load_from_zip_file(
        tmp_path / "run" / "model.zip", device="cpu"
    )  # (TQC.load asks for the env with HER)
    assert data["replay_buffer_class"].__name__ == "HerReplayBuffer"
    assert set(data["observation_space"].spaces) == {"observation", "achieved_goal", "desired_goal"}
    assert TQC.policy_aliases["MultiInputPolicy"].__name__ == "MultiInputPolicy"


@pytest.mark.skipif(not _installed("highway_env"), reason="needs rlexp[highway]")
@pytest.mark.slow
def test_highway_parking_trains_with_her(tmp_path: Path) -> None:
    args = ["algo=tqc", "env.id=parking-v0", "n_timesteps=150", "algo.learning_starts=100", "algo.batch_size=32"]
    summary, _ = _trained(args, tmp_path)
    assert summary["tuned_file"] == "tqc_parking"


@pytest.mark.skipif(not _installed("pybullet_envs_gymnasium"), reason="needs rlexp[bullet]")
def test_pybullet_locomotion_trains_with_normalization(tmp_path: Path) -> None:
    args = ["algo=ppo", "env.id=HopperBulletEnv-v0", "n_timesteps=128", "algo.n_steps=64", "algo.batch_size=64"]
    summary, _ = _trained(args, tmp_path)
    assert summary["tuned_file"] == "ppo_hopper_bullet" and (tmp_path / "run" / "vecnormalize.pkl").is_file()


@pytest.mark.slow
def test_carracing_trains_from_64x64_grey_frames(tmp_path: Path) -> None:
    from stable_baselines3 import PPO

    args = [
        "algo=ppo",
        "env.id=CarRacing-v3",
        "n_timesteps=128",
        "env.n_envs=2",
        "algo.n_steps=64",
        "algo.batch_size=64",
    ]
    summary, _ = _trained(args, tmp_path)
    assert summary["tuned_file"] == "ppo_carracing"
    assert _loads(tmp_path / "run", PPO).observation_space.shape == (2, 64, 64)  # 2 stacked grey frames


def test_bad_env_input_is_one_line_and_makes_no_run_dir(tmp_path: Path) -> None:
    cases = {
        ("env.id=Hoper-v5",): "Did you mean: `Hopper`?",
        ("algo=sac", "env.id=ALE/Breakout-v5"): "SAC cannot act in env.id=ALE/Breakout-v5",
        ("+algo.policy_kwargs.net_arch=abc",): "algo.policy_kwargs.net_arch='abc': takes a list of layer sizes",
        ("env=hopper", "env.id=Reacher-v2"): "needs mujoco-py",
        ("env=atari", "env.id=CartPole-v1"): "the atari preset takes an Atari game id",
    }
    for args, message in cases.items():
        run = tmp_path / "never"
        result = rlexp_cli([*args, *QUICK, "n_timesteps=64", f"hydra.run.dir={run}"], tmp_path)
        lines = [line for line in result.stderr.splitlines() if line.startswith("rlexp: error")]
        assert result.returncode == 1 and len(lines) == 1 and message in lines[0], (args, result.stderr[-800:])
        assert not run.exists()


@pytest.mark.slow
def test_an_mlp_on_images_is_warned_in_one_line(tmp_path: Path) -> None:
    args = ["algo=ppo", "env.id=CarRacing-v3", "~tuned", "n_timesteps=64", "algo.n_steps=64", "algo.batch_size=64"]
    _, stderr = _trained(args, tmp_path)
    assert "warning: algo.policy=MlpPolicy on image observations (3x96x96) of CarRacing-v3" in stderr


def test_a_missing_family_package_names_the_extra() -> None:
    from gymnasium.error import DependencyNotInstalled

    from rlexp.config.env_families import missing_extra

    line = missing_extra("Hopper-v5", DependencyNotInstalled("No module named 'mujoco'"))
    assert line == (
        "env.id=Hopper-v5: an env of the mujoco family, whose simulator is not installed (pip install 'rlexp[mujoco]')"
    )
    assert missing_extra("CartPole-v1", DependencyNotInstalled("pygame")) is None


def test_rlexp_list_shows_the_tuned_pairs(tmp_path: Path) -> None:
    result = rlexp_cli(["list", "--algo", "sac", "--env", "Hopper-v4"], tmp_path)
    assert result.returncode == 0, result.stderr
    assert "sac   hopper  Hopper-v5  mujoco  1,000,000    rl-zoo3 2.9.2 sac.yml Hopper-v4" in result.stdout
    everything = rlexp_cli(["list"], tmp_path).stdout
    assert "dqn            cartpole" in everything and "departs: env.n_envs, algo.train_freq" in everything
    # the last line names the extras this machine lacks, as one pip command, and only those
    last = everything.splitlines()[-1]
    lacking = re.fullmatch(
        r"rlexp list: 240 tuned pairs(?:; \d+ of them need extras not installed here: pip install 'rlexp\[([\w,]+)\]')?",
        last,
    )
    assert lacking, last
    for extra in (lacking[1] or "").split(",") if lacking[1] else []:
        assert importlib.util.find_spec(BY_NAME[extra].module or extra) is None, extra
    bad = rlexp_cli(["list", "--family", "mujocoo"], tmp_path)
    assert bad.returncode == 1 and "did you mean mujoco?" in bad.stderr


def test_a_family_is_one_entry_with_its_extra_and_its_preset() -> None:
    """Each family's extra is one of pyproject's, its preset for any id is shipped, and the allow-list takes
    its package and its wrappers' modules from the entry."""
    import tomllib
    from importlib.resources import files

    from rlexp.config.env_families import FAMILIES
    from rlexp.rundir.trust import CLASS_MODULES, ENV_PACKAGES

    pyproject = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    extras = pyproject["project"]["optional-dependencies"]
    for family in FAMILIES:
        assert family.extra is None or family.extra in extras, family.name
        assert family.preset is None or (files("rlexp.conf") / "env" / f"{family.preset}.yaml").is_file()
        assert family.package in ENV_PACKAGES and set(family.class_modules) <= set(CLASS_MODULES)
    assert "stable_baselines3.common.atari_wrappers" in CLASS_MODULES and "minigrid.wrappers" in CLASS_MODULES


def _fetch_runs() -> bool:
    from importlib.metadata import version

    major, minor = (int(p) for p in version("mujoco").split(".")[:2])
    return (major, minor) < (3, 11)


@pytest.mark.skipif(not _installed("gymnasium_robotics"), reason="needs rlexp[robotics]")
def test_fetch_trains_with_her_or_says_in_one_line_which_mujoco_it_needs(tmp_path: Path) -> None:
    args = ["algo=tqc", "env.id=FetchReach-v1", "n_timesteps=150", "algo.learning_starts=100", "algo.batch_size=32"]
    if _fetch_runs():
        summary, stderr = _trained(args, tmp_path)
        assert summary["tuned_file"] == "tqc_fetchreach" and "training FetchReach-v4" in stderr
        return
    run = tmp_path / "never"
    result = rlexp_cli([*args, *QUICK, f"hydra.run.dir={run}"], tmp_path)
    errors = [line for line in result.stderr.splitlines() if line.startswith("rlexp: error")]
    assert result.returncode == 1 and len(errors) == 1 and "they run with mujoco < 3.11" in errors[0], result.stderr
    assert not run.exists()
