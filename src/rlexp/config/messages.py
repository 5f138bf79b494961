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
        missing, group = _MISSING_OPTION.search(" ".join(lines[:i])), _GROUP.match(line)
        if missing and group and missing["path"].startswith(group[1] + "/"):
            rest = lines[i + 1 :]
            rest = rest[: rest.index("Config search path:")] if "Config search path:" in rest else rest
            return _no_option(group[1], missing["path"][len(group[1]) + 1 :], rest)
    text = " ".join(lines)
    unknown = _NOT_IN_SCHEMA.search(text)
    if unknown:  # a misspelt key: say which one was meant
        parent = unknown["key"].rpartition(".")[0]
        where = f"{parent} has" if parent else "the config has"
        known = schema_fields(unknown["schema"])
        return f"{unknown['key']}: {where} no such key{did_you_mean(unknown['name'], known)}"
    open_dict = _NOT_IN_DICT.search(text)
    if open_dict:  # a key of a free-form dict (policy_kwargs, env.kwargs) that the config does not set
        key = open_dict["key"]
        return f"{key}: not set by the config, so a + adds it: +{key}=<value>"
    return text


_MISSING_OPTION = re.compile(r"Could not find '(?P<path>[^']+)'")
_GROUP = re.compile(r"Available options in '([^']+)'")
_NOT_IN_SCHEMA = re.compile(r"Could not override '(?P<key>[\w.]+)'\. Key '(?P<name>\w+)' not in '(?P<schema>\w+)'")
_NOT_IN_DICT = re.compile(r"Could not override '(?P<key>[\w.]+)'\. Key '\w+' is not in struct")
_ENV_ID = re.compile(r"-v\d+$|[/:]")  # what an env id has and a preset name does not (CartPole-v1, ALE/Pong-v5)
_LISTED = 15  # options named in the line; more are counted


def _no_option(group: str, option: str, options: list[str]) -> str:
    """An option a config group does not have: the one meant, the options (or where they are listed)."""
    if group == "env" and _ENV_ID.search(option):
        return f"env={option}: env= picks one of rlexp's env presets; an env id goes in env.id: rlexp env.id={option}"
    listed = ", ".join(options) if len(options) <= _LISTED else f"{len(options)} of them, listed by rlexp --help"
    return f"{group}={option}: no such option{did_you_mean(option, options)}; options: {listed}"
