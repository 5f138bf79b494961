"""The env an RL Zoo agent plays where its id no longer builds (mujoco-py's ``-v3``, ``LunarLander-v2``,
``Pendulum-v0``, ``FetchReach-v1``, ``PandaReach-v1``): the env preset that ``replaces:`` it (conf/env), or ``-v4``
where only ``-v4`` gives the agent's observations (Ant, Humanoid) or the model it trained on (Walker2d). The move is said in one line; the spaces are checked again
against the agent's before a step is played (rlexp.loading.spaces.check_spaces)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rlexp.config.env_routing import preset_index


@dataclass(frozen=True)
class ShapeMove:
    """Agents of an old id observing ``dims`` values play ``env_id`` with ``kwargs`` (``-v5`` gives other
    shapes); values ``forces`` on are the bodies' contact forces."""

    env_id: str
    dims: int
    forces: int
    kwargs: dict[str, Any] = field(default_factory=dict)


# mujoco-py's Ant-v3 and Humanoid-v3 observed the bodies' contact forces (cfrc_ext, with the world body's):
# -v5 leaves the world body out (Ant 105, Humanoid 348 values), -v4 keeps them
SHAPE_MOVES = {
    **dict.fromkeys(("Ant-v2", "Ant-v3"), ShapeMove("Ant-v4", 111, 27, {"use_contact_forces": True})),
    **dict.fromkeys(("Humanoid-v2", "Humanoid-v3"), ShapeMove("Humanoid-v4", 376, 292)),
}
# ids whose -v5 changed the model the agent trained on: played on -v4, the old model with today's bindings.
# Walker2d-v5 gives the right foot the left's friction (1.9, not 0.9): RL Zoo's TRPO Walker2d-v3 agent scores
# 4,736 on -v4 and 2,469 on -v5 (20 episodes, benchmarks/zoo_agents.py; its published score is 4,933)
SAME_MODEL = dict.fromkeys(("Walker2d-v2", "Walker2d-v3"), "Walker2d-v4")
WHY_SAME_MODEL = "Walker2d-v5 gives the right foot the left's friction, which the agent never trained with"
# a normalized value whose variance stayed below this in training was constant
CONSTANT_VARIANCE = 1e-6
ZEROED = "rlexp.builders.wrappers.ZeroedObservations"


@dataclass(frozen=True)
class Move:
    env_id: str
    kwargs: dict[str, Any]
    line: str
    wrappers: dict[str, Any] = field(default_factory=dict)


def moved_env(old: str, kwargs: dict[str, Any], observed: tuple[int, ...] | None, variance: Any = None) -> Move | None:
    """Where the zoo's ``old`` id no longer builds, the env the agent plays instead (None: it builds as it is).
    ``observed``: the shape of the agent's observations (a Box's), where known; ``variance``: its
    VecNormalize statistics' variance of each observed value, where it normalized."""
    preset = preset_index().get(old)
    if preset is None or preset.how != "replaced":
        return None
    if old in SAME_MODEL:
        return Move(
            SAME_MODEL[old],
            {**dict(preset.kwargs), **kwargs},
            f"{old} (the agent's env) no longer builds: playing {SAME_MODEL[old]}, its model ({WHY_SAME_MODEL})",
        )
    by_shape = SHAPE_MOVES.get(old)
    # (a time feature, RL Zoo's TimeFeatureWrapper, adds one value after the env's)
    if by_shape is None or observed is None or observed[:1] not in ((by_shape.dims,), (by_shape.dims + 1,)):
        return Move(
            preset.env_id,
            {**dict(preset.kwargs), **kwargs},
            f"{old} (the agent's env) no longer builds with Gymnasium 1.4 and its packages: playing "
            f"{preset.env_id} (env={preset.name})",
        )
    given = "".join(f" with {k}={v}" for k, v in by_shape.kwargs.items())
    line = (
        f"{old} (the agent's env) no longer builds: playing {by_shape.env_id}{given}, which alone gives its "
        f"{by_shape.dims} observations ({preset.env_id} leaves out the world body's)"
    )
    forces = f"values {by_shape.forces}-{by_shape.dims - 1}"
    if _constant(variance, by_shape.forces, by_shape.dims):
        return Move(
            by_shape.env_id,
            {**kwargs, **by_shape.kwargs},
            f"{line}; its contact forces ({forces}) were 0 throughout training (mujoco-py >= 2: variance 0 in its "
            "vecnormalize.pkl), and are played as 0",
            {"zeroed_contact_forces": {"_target_": ZEROED, "first": by_shape.forces, "stop": by_shape.dims}},
        )
    seen = (
        "the agent saw them in training (variance > 0 in its vecnormalize.pkl)"
        if variance is not None
        else ("whether it saw them in training is unknown (no vecnormalize.pkl)")
    )
    return Move(by_shape.env_id, {**kwargs, **by_shape.kwargs}, f"{line}; contact forces ({forces}): {seen}")


def _constant(variance: Any, first: int, stop: int) -> bool:
    """Whether the statistics' variance of values ``first`` to ``stop - 1`` stayed 0 throughout training."""
    import numpy as np

    return np.ndim(variance) == 1 and len(variance) >= stop and float(np.max(variance[first:stop])) < CONSTANT_VARIANCE
