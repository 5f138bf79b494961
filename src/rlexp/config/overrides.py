"""Hydra override strings: those rlexp writes for the user to run (trial commands, resume hints, command.txt)
and those it reads as RL papers write them (``n_timesteps=1e6``)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from rlexp.config.schema import integer_keys

_DECIMAL = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_INTEGER = re.compile(r"[+-]?\d+")


def as_override(key: str, value: Any) -> str:
    """``key=value`` in Hydra's override grammar (strings quoted where the grammar needs it, lists kept)."""
    if isinstance(value, str) and value[:1] not in ("[", "{"):
        if any(c in value for c in " ,=[]{}()'\"\\:$") or not value.isascii():
            return f"{key}='{value.replace(chr(39), chr(92) + chr(39))}'"
        return f"{key}={value}"
    return f"{key}={value}"


def whole_numbers(args: list[str]) -> list[str]:
    """``n_timesteps=1e6`` -> ``n_timesteps=1000000`` for keys typed int: RL papers and RL Zoo's YAML
    write budgets and sizes as floats, which the typed schema would refuse. Sweeps (``1e5,1e6``) too."""
    keys = integer_keys()
    out = []
    for arg in args:
        key, eq, value = arg.partition("=")
        parts = [p.strip() for p in value.split(",")]
        whole = all(_DECIMAL.fullmatch(p) and float(p).is_integer() for p in parts)
        if eq and key.lstrip("+~") in keys and whole:  # integers stay as written
            arg = f"{key}={','.join(p if _INTEGER.fullmatch(p) else str(int(float(p))) for p in parts)}"
        out.append(arg)
    return out


# keys that name a run dir, which a user may give through a `latest` link (rlexp.rundir.latest)
RUN_DIR_KEYS = ("trained_agent", "hydra.run.dir")


def links_resolved(args: list[str]) -> list[str]:
    """``trained_agent=outputs/ppo-cartpole/latest`` -> the run dir the link points to now, so that the run's
    records (command.txt, config.yaml, summary.json) name that run, and the new run, which re-points
    ``latest`` as it starts, still continues the one meant."""
    out = []
    for arg in args:
        key, eq, value = arg.partition("=")
        path = Path(value.strip("'\""))
        if eq and key.lstrip("+") in RUN_DIR_KEYS and path.exists() and path.resolve() != path.absolute():
            real = path.resolve()
            arg = as_override(key, os.path.relpath(real) if real.is_relative_to(Path.cwd()) else str(real))
        out.append(arg)
    return out
