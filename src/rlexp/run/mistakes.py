"""A mistake in the overrides said in one line in rlexp's words, naming the key and what it takes.

Hydra's and OmegaConf's errors span several lines in their own terms (``Error merging override ...
could not be converted to Integer full_key: ...``): ``one_line`` says them as the command prints them,
from the structured error OmegaConf raises where there is one (the key, the value, the node that refused
it), from Hydra's text where it gives nothing else. Some mistakes Hydra lets through: a config group's key
given an option's name (``lr_schedule=cosine``), a key the run needs removed (``~seed``); the front door
refuses those (``check_group_keys``, ``check_required``).
"""

from __future__ import annotations

import dataclasses
import functools
import re
from importlib.resources import files

import yaml
from hydra.errors import OverrideParseException
from omegaconf import DictConfig, ListConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException, ValidationError
from omegaconf.nodes import BooleanNode, EnumNode, FloatNode, IntegerNode, StringNode

from rlexp.config.overrides import list_keys
from rlexp.config.schema import ExperimentConfig, as_node, schema_fields
from rlexp.config.tuned import options_on_search_path
from rlexp.config.validation import did_you_mean
from rlexp.errors import ConfigError

# lines of Hydra's messages that do not help on one line (the "+" advice is wrong for typed groups)
_NOISE = ("object_type=", "To append to your config use", "Set the environment variable HYDRA_FULL_ERROR")


def one_line(err: BaseException) -> str:
    """Hydra's and OmegaConf's multi-line messages (and their cause) on one line."""
    cause = err if isinstance(err, OmegaConfBaseException) else err.__cause__
    if isinstance(err, OverrideParseException):  # Hydra's grammar: an unclosed bracket or quote
        reason = str(err).splitlines()[0]
        return (
            f"{err.override}: not a key=value override rlexp can read ({reason}): close each bracket and quote, "
            "and quote the whole override for the shell where it holds spaces or brackets: 'key=[64, 64]'"
        )
    if isinstance(cause, ValidationError) and cause.full_key:
        said = _wrong_value(cause, _override(err))
        if said is not None:
            return said
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
    sweep = _SWEEP.search(text)
    if sweep:  # seed=0,1 without -m
        return _comma_list(sweep["override"])
    unresolved = _UNCHOSEN.search(text)
    if unresolved:  # ~algo: the defaults list names the group's choice (tuned: ${algo}_${env})
        known = unresolved["keys"].split(", ")
        names = [name for name in re.findall(r"\$\{(\w+)\}", unresolved["expr"]) if name not in known]
        if names and group_options(names[0]):
            return _unchosen(names[0])
    added = _ADDED.search(text)
    if added:  # +seed=1: the key is there already
        return f"+{added['plain']}: {added['key']} is in the config already; drop the +: {added['plain']}"
    return text


_MISSING_OPTION = re.compile(r"Could not find '(?P<path>[^']+)'")
_GROUP = re.compile(r"Available options in '([^']+)'")
_NOT_IN_SCHEMA = re.compile(r"Could not override '(?P<key>[\w.-]+)'\. Key '(?P<name>[\w-]+)' not in '(?P<schema>\w+)'")
_NOT_IN_DICT = re.compile(r"Could not override '(?P<key>[\w.]+)'\. Key '\w+' is not in struct")
# Hydra's own words for these: its ConfigCompositionException carries its text only
_MERGING = re.compile(r"Error merging override (?P<override>.*)")
_SWEEP = re.compile(r"Ambiguous value for argument '(?P<override>.*?)' 1\. To use it as a list")
_UNCHOSEN = re.compile(r"Error resolving interpolation '(?P<expr>[^']*)', possible interpolation keys: (?P<keys>.*)")
_ADDED = re.compile(r"An item is already at '(?P<key>[^']+)'\. Either remove \+ prefix: '(?P<plain>.*?)'")
_ENV_ID = re.compile(r"-v\d+$|[/:]")  # what an env id has and a preset name does not (CartPole-v1, ALE/Pong-v5)
_LISTED = 15  # options named in a line; more are counted

# what a key of each node type takes, said after "not"
_TAKES = {IntegerNode: "an integer", FloatNode: "a number", BooleanNode: "true or false", StringNode: "a string"}


def _override(err: BaseException) -> str | None:
    """The override as the user typed it, where Hydra's message quotes it (``n_timesteps=1e400``, not ``inf``)."""
    merging = _MERGING.match(str(err).splitlines()[0]) if str(err) else None
    return merging["override"].strip() if merging else None


def _wrong_value(cause: ValidationError, override: str | None) -> str | None:
    """A value the key's type refuses, from OmegaConf's error: the key's node says what it takes; None where
    the node is not one this knows (then Hydra's text is said)."""
    key, value, node = str(cause.full_key), cause.value, cause.child_node
    said = override or f"{key}={'null' if value is None else value}"
    optional = node is not None and node._metadata.optional
    if isinstance(node, EnumNode):
        choices = [member.name for member in node.enum_type]
        if value is None and not optional:
            return f"{said}: {key} takes one of {', '.join(choices)}, not null"
        meant = did_you_mean(str(value), choices)
        return f"{said}: no such choice{meant}; choices: {', '.join(choices)}{' or null' * optional}"
    takes = next((words for kind, words in _TAKES.items() if isinstance(node, kind)), None)
    if takes is not None:
        if value is None:
            return f"{said}: {key} takes {takes}, not null"
        if value == "":
            return f"{said}: no value; {key} takes {takes}"
        return f"{said}: not {takes}{' (or null)' * optional}"
    placed = placed_groups().get(key)
    if placed is not None and isinstance(node, DictConfig):  # env.wrappers=time_feature
        return placed.said(said, key, str(value))
    if isinstance(node, ListConfig):
        return f"{said}: {key} takes a list: {key}=[{value}]"
    if isinstance(node, DictConfig):
        return f"{said}: {key} holds keys; set one with {key}.<name>=<value>"
    return None


def _comma_list(override: str) -> str:
    """``seed=0,1`` on a single run: a sweep needs -m (and a key that takes a list, brackets)."""
    key, _, value = override.partition("=")
    line = f"{override}: a comma list sweeps only with -m: rlexp -m {override}"
    if key.lstrip("+~") in list_keys():
        line += f"; a list value is written in brackets: {key}=[{value}]"
    return line


def _listed(options: list[str] | tuple[str, ...]) -> str:
    return ", ".join(options) if len(options) <= _LISTED else f"{len(options)} of them, listed by rlexp --help"


def _no_option(group: str, option: str, options: list[str]) -> str:
    """An option a config group does not have: the one meant, the options (or where they are listed)."""
    if group == "env" and _ENV_ID.search(option):
        return f"env={option}: env= picks one of rlexp's env presets; an env id goes in env.id: rlexp env.id={option}"
    return f"{group}={option}: no such option{did_you_mean(option, options)}; options: {_listed(options)}"


def _unchosen(group: str) -> str:
    """A config group left without an option (``~callbacks``, ``~algo``)."""
    return (
        f"~{group}: rlexp needs one of the {group} options; choose one instead: {group}=<option> "
        f"(options: {_listed(group_options(group))})"
    )


# ----------------------------------------------------------------------------------- what Hydra lets through
def group_options(group: str) -> tuple[str, ...]:
    """The options rlexp ships for a config group (its YAML files), sorted; () for a name that is no group."""
    folder = files("rlexp.conf") / group
    if not folder.is_dir():
        return ()
    return tuple(sorted(p.name.removesuffix(".yaml") for p in folder.iterdir() if p.name.endswith(".yaml")))


@dataclasses.dataclass(frozen=True)
class PlacedGroup:
    """A config group whose options are placed at a key of another name (``schedule@lr_schedule``, or a
    ``# @package env.wrappers`` header): the key holds the chosen option's config, chosen by ``selector``."""

    # the override's left side that chooses an option: schedule@lr_schedule, wrappers
    selector: str
    # the group's options (its YAML files)
    options: tuple[str, ...]

    def said(self, override: str, key: str, value: str) -> str:
        """The line refusing ``override``, which gives the group's key itself ``value``."""
        group = self.selector.split("@")[0]
        if value in self.options:
            return f"{override}: {key} is set by choosing a {group} option: {self.selector}={value}"
        meant = did_you_mean(value, list(self.options))
        return (
            f"{override}: {key} is set by choosing a {group} option: {self.selector}=<option>{meant}; "
            f"options: {', '.join(self.options)}"
        )


_PRIMARY = "config"  # the primary config, conf/<_PRIMARY>.yaml (rlexp.cli's config_name)
_PACKAGE_HEADER = re.compile(r"#\s*@package\s+(\S+)")


@functools.cache
def placed_groups() -> dict[str, PlacedGroup]:
    """The shipped groups placed at another key, by that key: read from conf/ (the primary config's
    defaults list, ``group@key: option``, and the options' ``# @package key`` headers), so that a group
    placed anew is known here without a list to keep."""
    conf = files("rlexp.conf")
    placed: dict[str, PlacedGroup] = {}
    for entry in yaml.safe_load((conf / f"{_PRIMARY}.yaml").read_text())["defaults"]:
        name = next(iter(entry)) if isinstance(entry, dict) else str(entry)
        group, at, key = name.split()[-1].partition("@")  # ("optional tuned", "override hydra/help")
        if at and not key.startswith("_") and group_options(group):
            placed[key] = PlacedGroup(f"{group}@{key}", group_options(group))
    for folder in conf.iterdir():
        if folder.name == "hydra":
            continue
        for option in group_options(folder.name):
            header = _PACKAGE_HEADER.match((folder / f"{option}.yaml").read_text())
            key = header[1] if header else folder.name
            if key not in (folder.name, "_group_") and not key.startswith("_"):
                placed.setdefault(key, PlacedGroup(folder.name, group_options(folder.name)))
    return placed


def check_group_keys(cfg: ExperimentConfig, overrides: list[str]) -> None:
    """``lr_schedule=cosine`` means ``schedule@lr_schedule=cosine``: a word given to a key that a config group
    fills would reach the builders as a word (Hydra lets it through: the key is untyped)."""
    for override in overrides:
        key, eq, value = override.partition("=")
        key = key.lstrip("+~")
        placed = placed_groups().get(key)
        if eq and placed is not None and not isinstance(OmegaConf.select(as_node(cfg), key, default=None), DictConfig):
            raise ConfigError(placed.said(override, key, value))


@functools.cache
def optional_groups() -> tuple[str, ...]:
    """The groups the primary config's defaults list takes as ``optional`` (search_space, tuned): Hydra leaves
    such a group out, saying nothing, when the option named does not exist."""
    entries = yaml.safe_load((files("rlexp.conf") / f"{_PRIMARY}.yaml").read_text())["defaults"]
    names = [next(iter(e)) if isinstance(e, dict) else str(e) for e in entries]
    return tuple(name.split()[-1] for name in names if name.split()[0] == "optional")


def check_optional_choices(overrides: list[str]) -> None:
    """``search_space=ppo2``: an option named for an optional group that has no such option (on Hydra's
    search path: a user's own conf dir counts)."""
    for override in overrides:
        group, eq, option = override.lstrip("+").partition("=")
        if eq and option != "null" and group in optional_groups() and option not in (found := _searched_options(group)):
            raise ConfigError(_no_option(group, option, list(found)))


def _searched_options(group: str) -> tuple[str, ...]:
    """A group's options on the running Hydra's search path (rlexp's own outside a Hydra app)."""
    from hydra.core.hydra_config import HydraConfig

    return tuple(options_on_search_path(group)) if HydraConfig.initialized() else group_options(group)


def check_required(cfg: ExperimentConfig, overrides: list[str]) -> None:
    """What a ``~key`` removed that the run needs, a group's option (``~callbacks``) or a key of the schema
    (``~seed``), and a value left ``???``: the run would fail later on, naming no override."""
    missing = sorted(OmegaConf.missing_keys(cfg))
    if missing:
        key = missing[0]
        raise ConfigError(_unchosen(key) if f"~{key}" in overrides else f"{key}: no value; set one: {key}=<value>")
    for override in (o for o in overrides if o.startswith("~")):
        key = override[1:].partition("=")[0]
        parent_key, _, name = key.rpartition(".")
        parent = OmegaConf.select(as_node(cfg), parent_key, default=None) if parent_key else as_node(cfg)
        schema = OmegaConf.get_type(parent) if isinstance(parent, DictConfig) else None
        declared = dataclasses.is_dataclass(schema) and name in {f.name for f in dataclasses.fields(schema)}
        if declared and name not in parent:
            raise ConfigError(f"{override}: rlexp needs {key}; set it instead: {key}=<value>")
