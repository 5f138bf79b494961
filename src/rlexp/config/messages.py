"""Hydra's and OmegaConf's errors, which span several lines, as the one line the command prints."""

from __future__ import annotations

import re

from omegaconf.errors import OmegaConfBaseException

from rlexp.config.schema import schema_fields
from rlexp.config.validation import did_you_mean

# lines of Hydra's messages that do not help on one line (the "+" advice is wrong for typed groups)
_NOISE = ("object_type=", "To append to your config use", "Set the environment variable HYDRA_FULL_ERROR")


def one_line(err: BaseException) -> str:
    """Hydra's and OmegaConf's multi-line messages (and their cause) on one line."""
    text = str(err)
    if isinstance(err.__cause__, OmegaConfBaseException) and str(err.__cause__) not in text:
        text += "\n" + str(err.__cause__)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    lines = [line for line in lines if not line.startswith(_NOISE)]
    for i, line in enumerate(lines):
        if line.startswith("Available options in"):
            rest = lines[i + 1 :]
            rest = rest[: rest.index("Config search path:")] if "Config search path:" in rest else rest
            return " ".join(lines[:i]) + f". {line} {', '.join(rest)}"
    text = " ".join(lines)
    unknown = re.search(r"Key '(\w+)' not in '(\w+)'", text)
    if unknown:  # a misspelt key: say which one was meant
        text += did_you_mean(unknown.group(1), schema_fields(unknown.group(2)))
    return text
