"""``env.id=<id>`` picks the env preset of that id, so that an RL Zoo id brings the zoo's tuned values and
the env's preprocessing: ``rlexp algo=sac env.id=Hopper-v4`` composes as ``env=hopper env.id=Hopper-v4``,
``env.id=BreakoutNoFrameskip-v4`` as ``env=atari env.id=BreakoutNoFrameskip-v4``. Hydra's defaults list
chooses the tuned file by group choice (``tuned/<algo>_<env>``), so the choice is made on the overrides,
before composition."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib.resources import files
from typing import Any

import yaml

from rlexp.config.env_families import FAMILIES, family_of
from rlexp.config.overrides import as_override


@dataclass(frozen=True)
class Preset:
    name: str
    env_id: str  # the id it builds
    how: str  # "own", "alias" (trains the id given) or "replaced" (trains env_id instead)
    kwargs: tuple[tuple[str, Any], ...] = ()  # the preset's env kwargs (LunarLander-v3's continuous engines)


@functools.cache
def _presets() -> dict[str, dict[str, Any]]:
    """The shipped env presets' YAML, by name (read once)."""
    found = sorted((files("rlexp.conf") / "env").iterdir(), key=lambda p: p.name)
    return {
        p.name.removesuffix(".yaml"): yaml.safe_load(p.read_text()) or {} for p in found if p.name.endswith(".yaml")
    }


@functools.cache
def preset_index() -> dict[str, Preset]:
    """Every id a shipped env preset answers to."""
    index: dict[str, Preset] = {}
    family_presets = {f.preset for f in FAMILIES if f.preset}  # (each answers to the ids of its family)
    for name, body in _presets().items():
        env_id = body.get("id")
        if not isinstance(env_id, str) or name in family_presets:
            continue
        kwargs = tuple((body.get("kwargs") or {}).items())
        index.setdefault(env_id, Preset(name, env_id, "own", kwargs))
        for alias in body.get("aliases") or ():
            index[alias] = Preset(name, env_id, "alias", kwargs)
        for old in body.get("replaces") or ():
            index[old] = Preset(name, env_id, "replaced", kwargs)
    return index


def preset_wrappers(env_id: str) -> dict[str, Any]:
    """The wrappers of the env preset ``env.id=<env_id>`` picks (none without a preset)."""
    name = preset_for(env_id)
    return dict(_presets().get(name, {}).get("wrappers") or {}) if name else {}


def variants(env_id: str, kwargs: dict[str, Any]) -> list[str]:
    """The presets of ``env_id`` with other kwargs than ``kwargs`` (LunarLander-v3 with continuous engines):
    where an algorithm cannot act in an env, one of them may be the env it can act in."""
    return [
        name for name, body in _presets().items() if body.get("id") == env_id and (body.get("kwargs") or {}) != kwargs
    ]


def _value(override: str) -> str:
    return override.split("=", 1)[1].strip().strip("'\"")


def preset_for(env_id: str) -> str | None:
    """The env preset ``env.id=<env_id>`` picks (None: no preset, the default one stays)."""
    preset = preset_index().get(env_id)
    if preset is not None:
        return preset.name
    family = family_of(env_id)
    return None if family is None else family.preset


def routed(overrides: list[str]) -> tuple[list[str], str | None]:
    """The overrides with the env preset that ``env.id=`` asks for (when no ``env=`` is given), and a line
    saying what changed where the id itself is replaced (None otherwise)."""
    if any(o.split("=", 1)[0].lstrip("+") == "env" for o in overrides):
        return overrides, None  # a preset chosen by hand stays
    positions = [i for i, o in enumerate(overrides) if o.split("=", 1)[0].lstrip("+") == "env.id"]
    if not positions:
        return overrides, None
    env_id = _value(overrides[positions[-1]])
    if "," in env_id or env_id.startswith(("choice(", "range(", "glob(")):
        return overrides, None  # a sweep over ids: each job keeps the preset given
    name = preset_for(env_id)
    if name is None:
        return overrides, None
    out = [*overrides, f"env={name}"]
    preset = preset_index().get(env_id)
    if preset is None or preset.how != "replaced":
        return out, None
    out[positions[-1]] = as_override("env.id", preset.env_id)
    return out, (
        f"env.id={env_id} (RL Zoo's id) is no longer built with Gymnasium 1.4 and its packages: training "
        f"{preset.env_id} with the same tuned values (env={preset.name})"
    )
