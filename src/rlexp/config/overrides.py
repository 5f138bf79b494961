"""Hydra override strings: those rlexp writes for the user to run (trial commands, resume hints, command.txt)
and those it reads as RL papers write them (``n_timesteps=1e6``), by the types of the keys they set."""

from __future__ import annotations

import dataclasses
import os
import re
import typing
from pathlib import Path
from typing import Any

from rlexp.config.algorithms import ALGORITHMS
from rlexp.config.schema import ExperimentConfig

_DECIMAL = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_INTEGER = re.compile(r"[+-]?\d+")


def _is_int(tp: Any) -> bool:
    return tp is int or (typing.get_origin(tp) is typing.Union and int in typing.get_args(tp))


def _is_list(tp: Any) -> bool:
    optional = typing.get_origin(tp) is typing.Union
    return any(typing.get_origin(t) is list for t in (typing.get_args(tp) if optional else (tp,)))


def _keys_typed(test: typing.Callable[[Any], bool]) -> set[str]:
    """Dotted keys whose type passes ``test`` in some schema: the experiment's, and ``algo.*`` any algorithm's."""
    keys: set[str] = set()

    def walk(schema: type, prefix: str) -> None:
        for name, tp in typing.get_type_hints(schema).items():
            if test(tp):
                keys.add(prefix + name)
            elif isinstance(tp, type) and dataclasses.is_dataclass(tp):
                walk(tp, f"{prefix}{name}.")

    walk(ExperimentConfig, "")
    for algorithm in ALGORITHMS:
        walk(algorithm.schema, "algo.")
    return keys


def integer_keys() -> set[str]:
    """Dotted keys typed int in some schema (``n_timesteps``, ``algo.buffer_size``, ``env.n_envs``...): the
    command line accepts whole floats such as ``1e6`` for them."""
    return _keys_typed(_is_int)


def list_keys() -> set[str]:
    """Dotted keys typed as a list (``logger.formats``, ``env.aliases``...): ``key=a,b`` there may mean a list."""
    return _keys_typed(_is_list)


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
