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


def _unbounded_alike(theirs: Any, ours: Any) -> bool:
    """Two Box spaces of one shape and dtype whose bounds differ only where one says float32's largest value and
    the other infinity (gym 0.19's CartPole velocities, gymnasium's): the same space, written otherwise."""
    import numpy as np
    from gymnasium import spaces

    if not (isinstance(theirs, spaces.Box) and isinstance(ours, spaces.Box)):
        return False
    if theirs.shape != ours.shape or theirs.dtype != ours.dtype:
        return False
    largest = np.finfo(np.float32).max
    for a, b in ((theirs.low, ours.low), (theirs.high, ours.high)):
        a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
        same = (a == b) | ((np.abs(a) >= largest) & (np.abs(b) >= largest) & (np.sign(a) == np.sign(b)))
        if not same.all():
            return False
    return True


def aligned_spaces(objects: dict[str, Any], env: VecEnv) -> tuple[dict[str, Any], list[str]]:
    """The env's observation space for the agent's where only their unbounded values are written otherwise (an
    agent saved with gym: CartPole's velocities bounded by float32's largest value, now by inf), which SB3's
    ``load`` with an env refuses; any other difference stays SB3's to refuse. Returns the objects to hand SB3
    and a line when the space is replaced."""
    theirs, ours = objects.get("observation_space"), env.observation_space
    if theirs is None or theirs == ours or not _unbounded_alike(theirs, ours):
        return objects, []
    said = "the agent's observation space bounds with float32's largest value what the env's leaves unbounded: the env's is used"
    return {**objects, "observation_space": ours}, [said]
