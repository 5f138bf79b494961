"""Hydra override strings that rlexp writes for the user to run: trial commands, resume hints, command.txt."""

from __future__ import annotations

from typing import Any


def as_override(key: str, value: Any) -> str:
    """``key=value`` in Hydra's override grammar (strings quoted where the grammar needs it, lists kept)."""
    if isinstance(value, str) and value[:1] not in ("[", "{"):
        if any(c in value for c in " ,=[]{}()'\"\\:$") or not value.isascii():
            return f"{key}='{value.replace(chr(39), chr(92) + chr(39))}'"
        return f"{key}={value}"
    return f"{key}={value}"
