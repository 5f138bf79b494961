"""A mapping of the config as plain Python: what a library's keyword arguments and a tracker's parameters take."""

from __future__ import annotations

from typing import Any

from omegaconf import OmegaConf


def plain_dict(node: Any, resolve: bool = True, enum_to_str: bool = False) -> dict[str, Any]:
    """``OmegaConf.to_container`` of a mapping (a schema's ``Dict`` field, a whole config), typed as one: its
    result type also holds lists, strings and None, which a mapping node never gives."""
    out = OmegaConf.to_container(node, resolve=resolve, enum_to_str=enum_to_str)
    if not isinstance(out, dict):
        raise TypeError(f"a mapping of the config was expected, got {type(out).__name__}")
    return out  # type: ignore[return-value]  # (OmegaConf types keys as str, int, enums...: a config's are str)
