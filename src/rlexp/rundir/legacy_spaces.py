"""gym's spaces read as gymnasium's, so that agents saved with gym (0.17 to 0.26: RL Zoo's published agents,
SB3 1.x) open with gym not installed, as data only.

A pickled gym space is a class name and a state (its bounds, shape, dtype, random generator). gymnasium's
spaces take most such states (``Space.__setstate__`` renames gym's ``shape`` and ``np_random``); what they do
not take is mended here: a MultiDiscrete of gym < 0.21 (gymnasium's reads ``_shape`` before renaming it) and
gym <= 0.21's ``RandomState`` generator, which gymnasium's ``sample`` cannot use (a new one is seeded on first
use, as for a space never seeded).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

# gym's module of each space class: gym 0.17 to 0.26 pickle them under these names
GYM_MODULES = {
    spaces.Box: "gym.spaces.box",
    spaces.Discrete: "gym.spaces.discrete",
    spaces.MultiDiscrete: "gym.spaces.multi_discrete",
    spaces.MultiBinary: "gym.spaces.multi_binary",
    spaces.Dict: "gym.spaces.dict",
    spaces.Tuple: "gym.spaces.tuple",
}


def _mended(state: Any) -> dict[str, Any]:
    state = dict(state)
    if "shape" in state:  # (gym < 0.21)
        state["_shape"] = state.pop("shape")
    if "np_random" in state:
        state["_np_random"] = state.pop("np_random")
    if not isinstance(state.get("_np_random"), np.random.Generator):
        state["_np_random"] = None
    return state


def _reader(base: type[spaces.Space]) -> type:
    """A class the unpickler builds for gym's ``base``: it takes the legacy state, then becomes ``base`` itself
    (the object is gymnasium's, nothing of this class stays)."""

    def __setstate__(self: Any, state: Any) -> None:
        self.__class__ = base
        base.__setstate__(self, _mended(state))

    return type(base.__name__, (base,), {"__setstate__": __setstate__, "__module__": __name__})


# (module, name) as a gym pickle names it -> what builds it as gymnasium's space
GYM_SPACES: dict[tuple[str, str], type] = {(module, cls.__name__): _reader(cls) for cls, module in GYM_MODULES.items()}
