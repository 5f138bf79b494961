"""Env families (Atari, MiniGrid, MuJoCo, robotics...): which package registers an id, which extra installs
it. RL Zoo's users type ids such as ``BreakoutNoFrameskip-v4`` or ``FetchPush-v4``, which Gymnasium only
knows once ale-py or gymnasium-robotics registered them; rlexp registers the family an id belongs to when
the id is used, and names the extra when its package is missing."""

from __future__ import annotations

import importlib
import importlib.util
import re
from dataclasses import dataclass

from rlexp.errors import ConfigError


@dataclass(frozen=True)
class Family:
    name: str
    extra: str | None  # pip install 'rlexp[<extra>]'; None: installed with rlexp
    # the module whose import registers the family's ids (None: Gymnasium's own)
    module: str | None
    # what the entry points of the family's envs start with
    entry_point: str
    # ids of the family, recognised before its module registered them
    ids: re.Pattern[str] | None = None


FAMILIES = (
    Family("atari", "atari", "ale_py", "ale_py", re.compile(r"^(ALE/.+-v\d+|\w+(NoFrameskip|Deterministic)-v[04])$")),
    Family("minigrid", "minigrid", "minigrid", "minigrid", re.compile(r"^(MiniGrid|BabyAI)-")),
    Family(
        "robotics",
        "robotics",
        "gymnasium_robotics",
        "gymnasium_robotics",
        re.compile(r"^(Fetch|HandManipulate|HandReach|AdroitHand|PointMaze|AntMaze|FrankaKitchen)"),
    ),
    Family("panda", "panda", "panda_gym", "panda_gym", re.compile(r"^Panda")),
    Family(
        "highway",
        "highway",
        "highway_env",
        "highway_env",
        re.compile(
            r"^(parking|highway|highway-fast|merge|roundabout|intersection|racetrack|exit|u-turn|two-way)-v\d+$"
        ),
    ),
    Family("bullet", "bullet", "pybullet_envs_gymnasium", "pybullet_envs_gymnasium", re.compile(r"BulletEnv-v\d+$")),
    Family("mujoco", "mujoco", None, "gymnasium.envs.mujoco"),
    Family("box2d", None, None, "gymnasium.envs.box2d"),
    Family("classic", None, None, "gymnasium.envs.classic_control"),
)
BY_NAME = {family.name: family for family in FAMILIES}


def _entry_point(env_id: str) -> str | None:
    import gymnasium as gym

    spec = gym.registry.get(env_id)
    return None if spec is None else str(spec.entry_point)


def family_of(env_id: str) -> Family | None:
    """The family of a registered id (by its entry point), of ``module:Id`` (by the module), or of an id whose
    package has not registered it yet (by its name; ale-py's ``Breakout-v4`` by asking ale-py)."""
    module, _, name = env_id.rpartition(":")
    entry_point = _entry_point(name)
    if entry_point is not None:
        return next((f for f in FAMILIES if entry_point.startswith(f.entry_point)), None)
    if module:  # a user's module: its own env, whatever its name looks like
        return next((f for f in FAMILIES if f.module == module), None)
    by_name = next((f for f in FAMILIES if f.ids is not None and f.ids.search(name)), None)
    if by_name is None and re.fullmatch(r"\w+-v[04]", name) and importlib.util.find_spec("ale_py") is not None:
        import gymnasium as gym

        gym.register_envs(importlib.import_module("ale_py"))  # (ALE's v0/v4 ids: Breakout-v4)
        entry_point = _entry_point(name)
        return BY_NAME["atari"] if entry_point is not None and entry_point.startswith("ale_py") else None
    return by_name


def register_family(env_id: str) -> Family | None:
    """Registers the ids of the family ``env_id`` belongs to (ale-py's, minigrid's...): a missing package is a
    one-line error naming rlexp's extra. Returns the family (None: no family rlexp knows)."""
    family = family_of(env_id)
    if family is None or family.module is None or _entry_point(env_id) is not None:
        return family
    import gymnasium as gym

    try:
        module = importlib.import_module(family.module)
    except ImportError as err:
        raise ConfigError(
            f"env.id={env_id}: an env of the {family.name} family, whose package {family.module} is not installed "
            f"(pip install 'rlexp[{family.extra}]'; {err})"
        ) from None
    gym.register_envs(module)
    return family


def missing_extra(env_id: str, err: BaseException) -> str | None:
    """The line for an env whose simulator is not installed (MuJoCo without ``mujoco``...), else None."""
    if "mujoco_py" in str(err) or "mujoco v2 and v3" in str(err):
        newer = re.sub(r"-v\d+$", "-v5", env_id)
        return f"env.id={env_id}: needs mujoco-py (MuJoCo envs older than v4), which does not install with Gymnasium 1.x; use {newer}"
    family = family_of(env_id)
    if family is None or family.extra is None:
        return None
    if family.name == "robotics" and isinstance(err, AssertionError):
        from importlib.metadata import version

        return (
            f"env.id={env_id}: gymnasium-robotics' Fetch envs fail under mujoco {version('mujoco')} (a joint-type "
            "check); they run with mujoco < 3.11: pip install 'rlexp[robotics]'"
        )
    from gymnasium.error import DependencyNotInstalled

    if isinstance(err, (DependencyNotInstalled, ImportError)):
        return (
            f"env.id={env_id}: an env of the {family.name} family, whose simulator is not installed "
            f"(pip install 'rlexp[{family.extra}]')"
        )
    return None


# families whose presets preprocess for the family (AtariWrapper, FlatObsWrapper): another env cannot take it
PREPROCESSED = {"atari": "an Atari game id (ALE/<Game>-v5 or <Game>NoFrameskip-v4)", "minigrid": "a MiniGrid id"}


def check_family(preset_family: str | None, env_id: str) -> None:
    """``env=atari env.id=CartPole-v1``: refused in one line rather than by the wrapper's own error."""
    if preset_family not in PREPROCESSED:
        return
    if ":" not in env_id:
        register_family(env_id)
    family = family_of(env_id)
    if family is None or family.name != preset_family:
        raise ConfigError(
            f"env.id={env_id}: the {preset_family} preset takes {PREPROCESSED[preset_family]}; "
            f"for {env_id}, leave env= out (env.id alone picks its preset)"
        )
