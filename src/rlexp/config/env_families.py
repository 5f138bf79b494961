"""Env families (Atari, MiniGrid, MuJoCo, robotics...), each one entry of ``FAMILIES`` holding all that rlexp
knows of it: which package registers its ids and which extra installs it, the preset an id of it gets and
what that preset does to its envs, how its runs are evaluated and vectorized, and the note its generated
presets carry. Routing (``env_routing``), the allow-list (``rundir.trust``), the env builders, EnvPool,
``rlexp list`` and the generator of ``conf/env`` and ``conf/tuned`` (``tools/zoo_import.py``) read it here.

RL Zoo's users type ids such as ``BreakoutNoFrameskip-v4`` or ``FetchPush-v4``, which Gymnasium only knows
once ale-py or gymnasium-robotics registered them; rlexp registers the family an id belongs to when the id is
used, and names the extra when its package is missing."""

from __future__ import annotations

import importlib
import importlib.util
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rlexp.errors import ConfigError


@dataclass(frozen=True)
class Family:
    """One env family. Adding one is an entry of ``FAMILIES``, its extra in pyproject.toml and
    ``nox -s zoo_import`` (docs/contributing.md, "Adding an env family")."""

    name: str
    # the module whose import registers the family's ids (None: Gymnasium's own)
    module: str | None
    # what the entry points of the family's envs start with (its first part: the package an env id's
    # "module:" part may import, rlexp.rundir.trust)
    entry_point: str
    # pip install 'rlexp[<extra>]'; None: installed with rlexp
    extra: str | None = None
    # ids of the family, recognised before its module registered them
    ids: re.Pattern[str] | None = None
    # the env preset of any id of the family that no preset of its own answers to (env.id=ALE/Pong-v5)
    preset: str | None = None
    # what the family's presets take, where their wrappers preprocess for the family (another env is
    # refused in one line saying so); None: any env may use them
    preset_takes: str | None = None
    # the wrappers every preset of the family has (env.wrappers: name -> class), and the preset's frame
    # stack and env kwargs
    wrappers: Mapping[str, str] = field(default_factory=dict, hash=False)
    frame_stack: int | None = None
    kwargs: Mapping[str, Any] = field(default_factory=dict, hash=False)
    # RL Zoo evaluates the family's agents with the stochastic policy (callbacks.eval.deterministic: false)
    stochastic_eval: bool = False
    # env.vec_env=envpool builds the game as EnvPool's Atari task: the preset's wrappers and frame stack
    # become EnvPool's own preprocessing, and episodes end with the game (not with a life)
    envpool_atari: bool = False
    # how `rlexp list` names the env of a tuned file made for the whole family (its tuned_env_id: the name)
    any_id: str | None = None
    # what the family's generated presets say of it (comment lines of conf/env/*.yaml)
    note: str = ""

    @property
    def package(self) -> str:
        """The package whose envs these are (``gymnasium`` for MuJoCo, Box2D, classic control)."""
        return self.entry_point.split(".", 1)[0]

    @property
    def wrapper_configs(self) -> dict[str, dict[str, str]]:
        """The family's wrappers as the presets' ``env.wrappers`` hold them."""
        return {name: {"_target_": target} for name, target in self.wrappers.items()}

    @property
    def class_modules(self) -> tuple[str, ...]:
        """The modules of the family's wrappers other than rlexp's own: modules whose classes a run's config
        may name (rlexp.rundir.trust)."""
        modules = (target.rpartition(".")[0] for target in self.wrappers.values())
        return tuple(m for m in modules if m.split(".", 1)[0] != "rlexp")


FAMILIES = (
    Family(
        "atari",
        module="ale_py",
        entry_point="ale_py",
        extra="atari",
        ids=re.compile(r"^(ALE/.+-v\d+|\w+(NoFrameskip|Deterministic)-v[04])$"),
        preset="atari",
        preset_takes="an Atari game id (ALE/<Game>-v5 or <Game>NoFrameskip-v4)",
        wrappers={"atari": "stable_baselines3.common.atari_wrappers.AtariWrapper"},
        frame_stack=4,
        kwargs={"frameskip": 1},
        stochastic_eval=True,
        envpool_atari=True,
        any_id="any Atari game",
        note=(
            "SB3's Atari preprocessing as the zoo applies it: AtariWrapper (no-op reset, frame skip 4 with max-pooling,\n"
            "84x84 grey, episode end on life loss, reward clipping) and a stack of 4 frames, channels-first for the\n"
            "CNN. frameskip=1: ALE/<Game>-v5 ids skip frames themselves; AtariWrapper does the skipping here, so\n"
            "ALE/Breakout-v5 and BreakoutNoFrameskip-v4 see the same frames (v5 keeps its sticky actions, p=0.25).\n"
            "pip install 'rlexp[atari]' (ale-py ships the ROMs)."
        ),
    ),
    Family(
        "minigrid",
        module="minigrid",
        entry_point="minigrid",
        extra="minigrid",
        ids=re.compile(r"^(MiniGrid|BabyAI)-"),
        preset="minigrid",
        preset_takes="a MiniGrid id",
        wrappers={"flat_obs": "minigrid.wrappers.FlatObsWrapper"},
        stochastic_eval=True,
        note="The grid as one flat vector (minigrid's FlatObsWrapper), as the zoo trains MiniGrid. pip install 'rlexp[minigrid]'.",
    ),
    Family(
        "robotics",
        module="gymnasium_robotics",
        entry_point="gymnasium_robotics",
        extra="robotics",
        ids=re.compile(r"^(Fetch|HandManipulate|HandReach|AdroitHand|PointMaze|AntMaze|FrankaKitchen)"),
        note="Goal-conditioned (dict observations: MultiInputPolicy). pip install 'rlexp[robotics]'.",
    ),
    Family(
        "panda",
        module="panda_gym",
        entry_point="panda_gym",
        extra="panda",
        ids=re.compile(r"^Panda"),
        # panda-gym 3 draws each episode's goal from the OS after the first reset: rlexp seeds every reset
        wrappers={"seeded_resets": "rlexp.build.wrappers.SeededResets"},
        note=(
            "Goal-conditioned (dict observations: MultiInputPolicy), PyBullet. pip install 'rlexp[panda]'.\n"
            "SeededResets: panda-gym 3.0.7 re-seeds each unseeded reset from the OS (its goals are not reproducible,\n"
            "the zoo's runs neither); rlexp seeds every reset from the run's seed, so that a run can be repeated."
        ),
    ),
    Family(
        "highway",
        module="highway_env",
        entry_point="highway_env",
        extra="highway",
        ids=re.compile(
            r"^(parking|highway|highway-fast|merge|roundabout|intersection|racetrack|exit|u-turn|two-way)-v\d+$"
        ),
        note="Goal-conditioned (dict observations: MultiInputPolicy). pip install 'rlexp[highway]'.",
    ),
    Family(
        "bullet",
        module="pybullet_envs_gymnasium",
        entry_point="pybullet_envs_gymnasium",
        extra="bullet",
        ids=re.compile(r"BulletEnv-v\d+$"),
        note="PyBullet's locomotion envs (pybullet_envs_gymnasium). pip install 'rlexp[bullet]'.",
    ),
    Family(
        "mujoco", module=None, entry_point="gymnasium.envs.mujoco", extra="mujoco", note="pip install 'rlexp[mujoco]'."
    ),
    Family("box2d", module=None, entry_point="gymnasium.envs.box2d"),
    Family("classic", module=None, entry_point="gymnasium.envs.classic_control"),
)
BY_NAME = {family.name: family for family in FAMILIES}


def family_named(name: str | None) -> Family | None:
    """The family an env config names (``env.family``); None for none, or for one rlexp does not know."""
    return BY_NAME.get(name or "")


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


def check_family(preset_family: str | None, env_id: str) -> None:
    """``env=atari env.id=CartPole-v1``: refused in one line rather than by the wrapper's own error."""
    preset = family_named(preset_family)
    if preset is None or preset.preset_takes is None:
        return
    if ":" not in env_id:
        register_family(env_id)
    family = family_of(env_id)
    if family is None or family.name != preset.name:
        raise ConfigError(
            f"env.id={env_id}: the {preset.name} preset takes {preset.preset_takes}; "
            f"for {env_id}, leave env= out (env.id alone picks its preset)"
        )
