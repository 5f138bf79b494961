"""An agent's spaces against an env's: what its layers depend on (the kinds and sizes of its observations and
actions) checked before a step is played, and bounds that older libraries wrote otherwise left to the env."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from stable_baselines3.common.vec_env import VecEnv

from rlexp.errors import ConfigError


def _shape(space: Any) -> Any:
    """What an agent's input or output layer depends on in a space: its kind and sizes (not its bounds)."""
    from gymnasium import spaces

    if isinstance(space, spaces.Dict):
        return ("Dict", tuple((key, _shape(sub)) for key, sub in sorted(space.spaces.items())))
    if isinstance(space, spaces.Tuple):
        return ("Tuple", tuple(_shape(sub) for sub in space.spaces))
    if isinstance(space, spaces.Discrete):
        return ("Discrete", int(space.n))
    if isinstance(space, spaces.MultiDiscrete):
        return ("MultiDiscrete", tuple(int(n) for n in space.nvec.ravel()))
    return (type(space).__name__, tuple(getattr(space, "shape", None) or ()))


def _described(shape: Any) -> str:
    kind, sizes = shape
    if kind == "Dict":
        return "Dict(" + ", ".join(f"{key}: {_described(sub)}" for key, sub in sizes) + ")"
    if kind == "Tuple":
        return "Tuple(" + ", ".join(_described(sub) for sub in sizes) + ")"
    return f"{kind}({sizes})" if kind == "Discrete" else f"{kind}{sizes}"


def check_spaces(objects: dict[str, Any], env: VecEnv, zip_path: Path, env_id: str) -> None:
    """Refuses, in one line, an agent whose observations or actions are not the env's (before a step is played)."""
    for key, what in (("observation_space", "observes"), ("action_space", "acts in")):
        if key not in objects:
            continue
        agent, here = _shape(objects[key]), _shape(getattr(env, key))
        if agent != here:
            raise ConfigError(
                f"{zip_path}: the agent {what} {_described(agent)}, but {env_id} here gives {_described(here)}: "
                "not played"
            )


def aligned_spaces(objects: dict[str, Any], env: VecEnv) -> tuple[dict[str, Any], list[str]]:
    """The env's spaces for the agent's, where they differ in bounds only (an agent saved with gym: CartPole's
    unbounded velocities were float32's largest value, now inf): SB3's ``load`` refuses any difference, but
    the agent's layers depend only on the kinds and sizes, which ``check_spaces`` has checked. Returns the
    objects to hand SB3 and a line for each space replaced."""
    objects, said = dict(objects), []
    for key in ("observation_space", "action_space"):
        theirs, ours = objects.get(key), getattr(env, key)
        if theirs is not None and theirs != ours and _shape(theirs) == _shape(ours):
            objects[key] = ours
            said.append(
                f"the agent's {key.replace('_', ' ')} has other bounds than the env's (an older gym's), the same "
                "sizes: the env's is used"
            )
    return objects, said
