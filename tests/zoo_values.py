"""RL Zoo's tuned hyperparameters (rl_zoo3/hyperparams/*.yml of the rl_zoo3 wheel pinned in the dev extra),
read into rlexp's keys (rlexp.zoo.format, which also reads the runs the zoo trains); and the writer of
conf/env and conf/tuned from them.

    python tests/zoo_values.py          # (nox -s zoo_import) rewrites the generated presets and tuned files

The reader is what tests/e2e/test_zoo_values.py compares every composed config with, key by key.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from rlexp.zoo.format import ALGOS, WRAPPER_NAMES, ZOO_VERSION, ClassRef, rlexp_values, yaml_value, zoo_dir

__all__ = ["ENVS", "ClassRef", "write", "zoo_pairs"]


@dataclass(frozen=True)
class Env:
    """One env the zoo tunes, as rlexp presets it."""

    preset: str
    built: str  # the id the preset builds
    family: str
    title: str
    aliases: tuple[str, ...] = ()  # ids that build as asked, with the preset's values
    replaces: tuple[str, ...] = ()  # ids no longer built (mujoco-py, renamed): the preset's id is built
    kwargs: dict[str, Any] = field(default_factory=dict)
    # what callbacks.stop=solved reaches where the Gymnasium spec has no reward_threshold
    reward_threshold: float | None = None


def _mujoco(name: str, preset: str, title: str, zoo_version: str) -> Env:
    # the zoo's -v4 trains as given; -v2/-v3 need mujoco-py (HumanoidStandup has no v3)
    replaces = ("v2",) if name == "HumanoidStandup" else ("v2", "v3")
    del zoo_version
    return Env(preset, f"{name}-v5", "mujoco", title, (f"{name}-v4",), tuple(f"{name}-{v}" for v in replaces))


def _minigrid(zoo_id: str, title: str) -> Env:
    preset = "minigrid_" + zoo_id.removeprefix("MiniGrid-").removesuffix("-v0").replace("-", "_").lower()
    return Env(preset, zoo_id, "minigrid", title)


# zoo env id -> preset. Ids the zoo tunes that are not here are in NOT_COVERED, with the reason.
ENVS: dict[str, Env] = {
    "CartPole-v1": Env("cartpole", "CartPole-v1", "classic", "balance a pole on a cart (discrete, solved at 475)"),
    "Acrobot-v1": Env("acrobot", "Acrobot-v1", "classic", "swing a two-link arm up (discrete)"),
    "MountainCar-v0": Env("mountaincar", "MountainCar-v0", "classic", "drive up a hill (discrete, sparse)"),
    "MountainCarContinuous-v0": Env(
        "mountaincar_continuous", "MountainCarContinuous-v0", "classic", "the continuous-action mountain car"
    ),
    "Pendulum-v1": Env(
        "pendulum",
        "Pendulum-v1",
        "classic",
        "swing up and hold a pendulum (continuous, -200 is good)",
        reward_threshold=-200,
    ),
    "LunarLander-v3": Env("lunarlander", "LunarLander-v3", "box2d", "land on the pad (discrete, solved at 200)"),
    "LunarLanderContinuous-v3": Env(
        "lunarlander_continuous",
        "LunarLander-v3",
        "box2d",
        "LunarLander-v3 with continuous engines",
        aliases=("LunarLanderContinuous-v3",),
        kwargs={"continuous": True},
    ),
    "BipedalWalker-v3": Env("bipedalwalker", "BipedalWalker-v3", "box2d", "walk a 2D biped over rough ground"),
    "BipedalWalkerHardcore-v3": Env(
        "bipedalwalker_hardcore", "BipedalWalkerHardcore-v3", "box2d", "BipedalWalker with stumps, pits and stairs"
    ),
    "CarRacing-v3": Env("carracing", "CarRacing-v3", "box2d", "drive a lap from 96x96 pixels"),
    "Ant-v4": _mujoco("Ant", "ant", "a four-legged ant runs forward", "v4"),
    "HalfCheetah-v4": _mujoco("HalfCheetah", "halfcheetah", "a 2D cheetah runs forward", "v4"),
    "Hopper-v4": _mujoco("Hopper", "hopper", "a one-legged hopper hops forward", "v4"),
    "Humanoid-v4": _mujoco("Humanoid", "humanoid", "a 3D humanoid walks forward", "v4"),
    "HumanoidStandup-v4": _mujoco("HumanoidStandup", "humanoidstandup", "a humanoid stands up from the ground", "v4"),
    "InvertedDoublePendulum-v2": _mujoco(
        "InvertedDoublePendulum", "inverteddoublependulum", "balance two poles on a cart", "v2"
    ),
    "InvertedPendulum-v2": _mujoco("InvertedPendulum", "invertedpendulum", "balance a pole on a cart", "v2"),
    "Reacher-v2": _mujoco("Reacher", "reacher", "a two-joint arm reaches a target", "v2"),
    "Swimmer-v4": _mujoco("Swimmer", "swimmer", "a three-link swimmer swims forward", "v4"),
    "Walker2d-v4": _mujoco("Walker2d", "walker2d", "a 2D biped walks forward", "v4"),
    "MiniGrid-DoorKey-5x5-v0": _minigrid("MiniGrid-DoorKey-5x5-v0", "pick up a key, open a door, reach the goal"),
    "MiniGrid-Empty-Random-5x5-v0": _minigrid("MiniGrid-Empty-Random-5x5-v0", "reach the goal in an empty room"),
    "MiniGrid-Fetch-5x5-N2-v0": _minigrid("MiniGrid-Fetch-5x5-N2-v0", "pick up the object the mission names"),
    "MiniGrid-FourRooms-v0": _minigrid("MiniGrid-FourRooms-v0", "reach the goal through four rooms"),
    "MiniGrid-GoToDoor-5x5-v0": _minigrid("MiniGrid-GoToDoor-5x5-v0", "go to the door the mission names"),
    "MiniGrid-KeyCorridorS3R1-v0": _minigrid("MiniGrid-KeyCorridorS3R1-v0", "find a key to unlock a room"),
    "MiniGrid-LockedRoom-v0": _minigrid("MiniGrid-LockedRoom-v0", "get the key from one room to open another"),
    "MiniGrid-MultiRoom-N4-S5-v0": _minigrid("MiniGrid-MultiRoom-N4-S5-v0", "cross four rooms to the goal"),
    "MiniGrid-ObstructedMaze-2Dlh-v0": _minigrid("MiniGrid-ObstructedMaze-2Dlh-v0", "a maze with blocked doors"),
    "MiniGrid-PutNear-6x6-N2-v0": _minigrid("MiniGrid-PutNear-6x6-N2-v0", "put one object next to another"),
    "MiniGrid-RedBlueDoors-6x6-v0": _minigrid("MiniGrid-RedBlueDoors-6x6-v0", "open the red door, then the blue"),
    "MiniGrid-Unlock-v0": _minigrid("MiniGrid-Unlock-v0", "open a locked door"),
    "parking-v0": Env("parking", "parking-v0", "highway", "park a car in a goal spot (goal-conditioned, highway-env)"),
    "PandaReach-v1": Env(
        "pandareach", "PandaReach-v3", "panda", "a Franka arm reaches a goal", replaces=("PandaReach-v1",)
    ),
    "PandaPush-v1": Env("pandapush", "PandaPush-v3", "panda", "push a cube to a goal", replaces=("PandaPush-v1",)),
    "PandaSlide-v1": Env("pandaslide", "PandaSlide-v3", "panda", "slide a puck to a goal", replaces=("PandaSlide-v1",)),
    "PandaPickAndPlace-v1": Env(
        "pandapickandplace",
        "PandaPickAndPlace-v3",
        "panda",
        "pick a cube and place it",
        replaces=("PandaPickAndPlace-v1",),
    ),
    "PandaStack-v1": Env("pandastack", "PandaStack-v3", "panda", "stack two cubes", replaces=("PandaStack-v1",)),
    "FetchReach-v1": Env(
        "fetchreach",
        "FetchReach-v4",
        "robotics",
        "a Fetch arm reaches a goal",
        replaces=("FetchReach-v1", "FetchReach-v2", "FetchReach-v3"),
    ),
    "FetchPush-v1": Env(
        "fetchpush",
        "FetchPush-v4",
        "robotics",
        "push a block to a goal",
        replaces=("FetchPush-v1", "FetchPush-v2", "FetchPush-v3"),
    ),
    "FetchSlide-v1": Env(
        "fetchslide",
        "FetchSlide-v4",
        "robotics",
        "slide a puck to a goal",
        replaces=("FetchSlide-v1", "FetchSlide-v2", "FetchSlide-v3"),
    ),
    "FetchPickAndPlace-v1": Env(
        "fetchpickandplace",
        "FetchPickAndPlace-v4",
        "robotics",
        "pick a block and place it",
        replaces=("FetchPickAndPlace-v1", "FetchPickAndPlace-v2", "FetchPickAndPlace-v3"),
    ),
    "HalfCheetahBulletEnv-v0": Env(
        "halfcheetah_bullet", "HalfCheetahBulletEnv-v0", "bullet", "PyBullet's half cheetah"
    ),
    "AntBulletEnv-v0": Env("ant_bullet", "AntBulletEnv-v0", "bullet", "PyBullet's ant"),
    "HopperBulletEnv-v0": Env("hopper_bullet", "HopperBulletEnv-v0", "bullet", "PyBullet's hopper"),
    "Walker2DBulletEnv-v0": Env("walker2d_bullet", "Walker2DBulletEnv-v0", "bullet", "PyBullet's 2D walker"),
    "HumanoidBulletEnv-v0": Env("humanoid_bullet", "HumanoidBulletEnv-v0", "bullet", "PyBullet's humanoid"),
    "ReacherBulletEnv-v0": Env("reacher_bullet", "ReacherBulletEnv-v0", "bullet", "PyBullet's reacher"),
    "InvertedDoublePendulumBulletEnv-v0": Env(
        "inverteddoublependulum_bullet", "InvertedDoublePendulumBulletEnv-v0", "bullet", "PyBullet's double pendulum"
    ),
    "InvertedPendulumSwingupBulletEnv-v0": Env(
        "invertedpendulumswingup_bullet",
        "InvertedPendulumSwingupBulletEnv-v0",
        "bullet",
        "PyBullet's pendulum swing-up",
    ),
    "atari": Env("atari", "PongNoFrameskip-v4", "atari", "any Atari 2600 game of the ALE (Pong unless env.id says)"),
}
# the zoo tunes HumanoidStandup under both ids, each algorithm under one of them: one preset
ENVS["HumanoidStandup-v2"] = ENVS["HumanoidStandup-v4"]
# presets of a family for any of its ids, beyond those the zoo tunes (no tuned files)
FAMILY_ONLY = (Env("minigrid", "MiniGrid-Empty-5x5-v0", "minigrid", "any MiniGrid env (Empty-5x5 unless env.id says)"),)
# the zoo's ids (or entries) rlexp does not cover, and why
NOT_COVERED = {
    "default": "the zoo's fallback for an env it has no entry for; rlexp says so and trains SB3's defaults",
    "CartPoleNoVel-v1": "the zoo's own env (rl_zoo3.import_envs), not a Gymnasium or PyPI package",
    "PendulumNoVel-v1": "the zoo's own env (rl_zoo3.import_envs)",
    "MountainCarNoVel-v0": "the zoo's own env (rl_zoo3.import_envs)",
    "MountainCarContinuousNoVel-v0": "the zoo's own env (rl_zoo3.import_envs)",
    "LunarLanderNoVel-v2": "the zoo's own env (rl_zoo3.import_envs)",
    "LunarLanderContinuousNoVel-v2": "the zoo's own env (rl_zoo3.import_envs)",
    "CarRacing-v0": "its values need the zoo's autoencoder (ae.wrapper, a file under logs/), not on PyPI",
    "sac:CarRacing-v3": "its values need the zoo's autoencoder (ae.wrapper, a file under logs/), not on PyPI",
    "MinitaurBulletEnv-v0": "pybullet_envs_gymnasium 0.6 has no Minitaur envs",
    "MinitaurBulletDuckEnv-v0": "pybullet_envs_gymnasium 0.6 has no Minitaur envs",
    "A1Walking-v0": "a robot env of the zoo's authors, not on PyPI",
    "A1Jumping-v0": "a robot env of the zoo's authors, not on PyPI",
    "NeckEnvRelative-v2": "a robot env of the zoo's authors, not on PyPI",
    "donkey-generated-track-v0": "the Donkey Car simulator (gym-donkeycar, a Unity app), not installable here",
    "RocketLander-v0": "gym-rocketlander is a gym (not Gymnasium) package",
}


# (algo, zoo env id) -> rlexp's departures from the zoo: values and the measured reason (written into the
# tuned file's tuned_departures, which the comparison test accepts and nothing else)
DEPARTURES: dict[tuple[str, str], tuple[dict[str, Any], str]] = {
    ("dqn", "CartPole-v1"): (
        {"env.n_envs": 8, "algo.train_freq": 32},
        "the zoo's values (1 env, train_freq 256) reached only ~19 at seed 0 here, 8 envs with train_freq 256 "
        "reached 164; 8 envs with train_freq 32 keep the zoo's 128 gradient steps per 256 transitions and reach "
        "500 at seed 0 (SB3 2.9.2, 50k steps)",
    ),
}


def zoo_pairs() -> dict[tuple[str, str], dict[str, Any]]:
    """(rlexp algo, zoo env id) -> the zoo's values in rlexp's keys, for every pair rlexp covers."""
    pairs = {}
    for path in sorted(zoo_dir().glob("*.yml")):
        if path.stem not in ALGOS:
            continue
        for env_id, hyperparams in yaml.safe_load(path.read_text()).items():
            if env_id in NOT_COVERED or f"{path.stem}:{env_id}" in NOT_COVERED:
                continue
            if env_id not in ENVS:
                raise KeyError(f"{path.name}: {env_id} is neither in ENVS nor in NOT_COVERED")
            pairs[(ALGOS[path.stem], env_id)] = rlexp_values(hyperparams)
    return pairs


# ------------------------------------------------------------------------------------ the writer
REPO = Path(__file__).resolve().parents[1]
GENERATED = (
    "# generated by tests/zoo_values.py from RL Zoo {version} (nox -s zoo_import); edit the generator, not this file\n"
)
FAMILY_WRAPPERS = {
    "atari": {"atari": {"_target_": "stable_baselines3.common.atari_wrappers.AtariWrapper"}},
    "minigrid": {"flat_obs": {"_target_": "minigrid.wrappers.FlatObsWrapper"}},
    # panda-gym 3 draws each episode's goal from the OS after the first reset: rlexp seeds every reset
    "panda": {"seeded_resets": {"_target_": "rlexp.build.wrappers.SeededResets"}},
}
FAMILY_NOTES = {
    "atari": (
        "SB3's Atari preprocessing as the zoo applies it: AtariWrapper (no-op reset, frame skip 4 with max-pooling,\n"
        "# 84x84 grey, episode end on life loss, reward clipping) and a stack of 4 frames, channels-first for the\n"
        "# CNN. frameskip=1: ALE/<Game>-v5 ids skip frames themselves; AtariWrapper does the skipping here, so\n"
        "# ALE/Breakout-v5 and BreakoutNoFrameskip-v4 see the same frames (v5 keeps its sticky actions, p=0.25).\n"
        "# pip install 'rlexp[atari]' (ale-py ships the ROMs)."
    ),
    "minigrid": "The grid as one flat vector (minigrid's FlatObsWrapper), as the zoo trains MiniGrid. pip install 'rlexp[minigrid]'.",
    "mujoco": "pip install 'rlexp[mujoco]'.",
    "robotics": "Goal-conditioned (dict observations: MultiInputPolicy). pip install 'rlexp[robotics]'.",
    "panda": (
        "Goal-conditioned (dict observations: MultiInputPolicy), PyBullet. pip install 'rlexp[panda]'.\n"
        "# SeededResets: panda-gym 3.0.7 re-seeds each unseeded reset from the OS (its goals are not reproducible,\n"
        "# the zoo's runs neither); rlexp seeds every reset from the run's seed, so that a run can be repeated."
    ),
    "highway": "Goal-conditioned (dict observations: MultiInputPolicy). pip install 'rlexp[highway]'.",
    "bullet": "PyBullet's locomotion envs (pybullet_envs_gymnasium). pip install 'rlexp[bullet]'.",
    "box2d": "",
    "classic": "",
}


def _dump(header: str, body: dict[str, Any]) -> str:
    """Top-level keys in block style, short nested values in flow style."""
    out = header
    for key, value in body.items():
        if isinstance(value, (dict, list)) and value:
            nested = yaml.safe_dump(value, sort_keys=False, default_flow_style=None, width=116)
            flow = nested.startswith(("{", "["))
            out += f"{key}: {nested}" if flow else f"{key}:\n" + textwrap.indent(nested, "  ")
        else:
            out += yaml.safe_dump({key: value}, sort_keys=False, default_flow_style=False)
    return out


def preset_text(env: Env) -> str:
    lines = [GENERATED.format(version=ZOO_VERSION), f"# {env.built}: {env.title}. rlexp env={env.preset}\n"]
    if FAMILY_NOTES[env.family]:
        lines.append(f"# {FAMILY_NOTES[env.family]}\n")
    if env.aliases:
        lines.append(f"# env.id={env.aliases[0]} (RL Zoo's id) trains {env.aliases[0]} with the same tuned values.\n")
    if env.replaces:
        lines.append(
            f"# env.id={' / '.join(env.replaces)} (RL Zoo's; no longer built with Gymnasium 1.4) trains {env.built}, and says so.\n"
        )
    lines.append("defaults:\n  - /env_schema@_here_\n  - _self_\n\n")
    body: dict[str, Any] = {"id": env.built, "family": env.family}
    if env.aliases:
        body["aliases"] = list(env.aliases)
    if env.replaces:
        body["replaces"] = list(env.replaces)
    kwargs = dict(env.kwargs)
    if env.family == "atari":
        kwargs["frameskip"] = 1
        body["frame_stack"] = 4
    if kwargs:
        body["kwargs"] = kwargs
    if env.family in FAMILY_WRAPPERS:
        body["wrappers"] = FAMILY_WRAPPERS[env.family]
    if env.reward_threshold is not None:
        lines.append(f"# reward_threshold: what callbacks.stop=solved reaches ({env.built}'s spec has none)\n")
        body["reward_threshold"] = env.reward_threshold
    return _dump("".join(lines), body)


def tuned_text(algo: str, zoo_file: str, env_id: str, values: dict[str, Any]) -> str:
    env = ENVS[env_id]
    name = f"{algo}_{env.preset}"
    header = "# @package _global_\n" + GENERATED.format(version=ZOO_VERSION)
    header += (
        f"# {algo.upper()} on {env_id if env_id != 'atari' else 'any Atari game'}: rlexp algo={algo} env={env.preset}\n"
    )
    header += f"# Source: RL Baselines3 Zoo {ZOO_VERSION} (DLR-RM/rl-baselines3-zoo, MIT licence), hyperparams/{zoo_file}.yml, entry {env_id}.\n"
    body: dict[str, Any] = {
        "tuned_file": name,
        "tuned_env_id": env.built if env_id != "atari" else "atari",
        "tuned_source": f"rl-zoo3 {ZOO_VERSION} {zoo_file}.yml {env_id}",
    }
    nested: dict[str, Any] = {}
    preset_wrappers = FAMILY_WRAPPERS.get(env.family, {})
    for key, value in values.items():
        if key == "env.wrappers":
            wrappers = {}
            for target, kwargs in value:
                short = WRAPPER_NAMES[target.rsplit(".", 1)[1]]
                if short in preset_wrappers and preset_wrappers[short]["_target_"] == target:
                    if kwargs:
                        wrappers[short] = kwargs
                    continue
                wrappers[short] = {"_target_": target, **kwargs}
            if wrappers:
                nested.setdefault("env", {})["wrappers"] = wrappers
            continue
        if key == "env.frame_stack" and env.family == "atari" and value == 4:
            continue  # the preset's
        if key == "env.normalize_kwargs":
            value = {k: ("${algo.gamma}" if k == "gamma" else v) for k, v in value.items()}
            if not value:
                continue
        if key in ("lr_schedule", "clip_range_schedule"):
            body.setdefault("_schedules", {})[key] = {"_target_": f"rlexp.build.schedules.{value}"}
            continue
        if key == "n_timesteps":
            body["n_timesteps"] = value
            continue
        head, _, rest = key.partition(".")
        node = nested.setdefault(head, {})
        node[rest] = yaml_value(value)
    if env.family in ("atari", "minigrid"):  # the zoo evaluates these with the stochastic policy
        nested["callbacks"] = {"eval": {"deterministic": False}}
    schedules = body.pop("_schedules", {})
    body.update(nested)
    body.update(schedules)
    if (algo, env_id) in DEPARTURES:
        changed, reason = DEPARTURES[(algo, env_id)]
        for key, value in changed.items():
            head, _, rest = key.partition(".")
            body.setdefault(head, {})[rest] = value
        body["tuned_departures"] = list(changed)
        wrapped = textwrap.wrap(f"rlexp departs from the zoo in {', '.join(changed)}: {reason}.", 110)
        header += "".join(f"# {line}\n" for line in wrapped)
    note = ""
    if "env" in nested and "normalize_kwargs" in nested["env"] and "gamma" in nested["env"]["normalize_kwargs"]:
        note = "# (VecNormalize discounts returns with the algorithm's gamma, as the zoo does)\n"
    return _dump(header + note, body)


def write() -> None:
    conf = REPO / "conf"
    pairs = zoo_pairs()
    for path in (conf / "tuned").glob("*.yaml"):  # every tuned file is generated
        path.unlink()
    zoo_files = {v: k for k, v in ALGOS.items()}
    for env in {e.preset: e for e in (*ENVS.values(), *FAMILY_ONLY)}.values():
        (conf / "env" / f"{env.preset}.yaml").write_text(preset_text(env))
    for (algo, env_id), values in sorted(pairs.items()):
        text = tuned_text(algo, zoo_files[algo], env_id, values)
        (conf / "tuned" / f"{algo}_{ENVS[env_id].preset}.yaml").write_text(text)
    print(f"wrote {len(ENVS)} env presets and {len(pairs)} tuned files from rl_zoo3 {ZOO_VERSION}")


if __name__ == "__main__":
    write()
