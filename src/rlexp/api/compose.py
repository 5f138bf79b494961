"""Hydra's compose API over rlexp's configs: overrides handled and checked as the command does."""

from __future__ import annotations

import copy
import weakref
from collections.abc import Sequence
from typing import Any

from omegaconf import DictConfig

from rlexp.config.plain import plain_dict
from rlexp.config.schema import as_experiment, as_node
from rlexp.errors import ConfigError
from rlexp.run.hydra_session import command_overrides, hydra_session

# configs returned by compose(): id -> (the config, weakly; its overrides; the config as composed)
_composed: dict[int, tuple[weakref.ref[DictConfig], list[str], DictConfig]] = {}


def user_error(err: BaseException) -> ConfigError:
    """Hydra's and OmegaConf's errors as the command's one line."""
    from rlexp.run.mistakes import one_line

    return ConfigError(one_line(err))


def checked_overrides(overrides: Sequence[str]) -> list[str]:
    """A list of ``key=value`` strings as the command takes them (rlexp.run.hydra_session.command_overrides:
    n_timesteps=1e5, a ``latest`` link as the run dir it points to now, an env id's preset)."""
    if isinstance(overrides, str) or not all(isinstance(o, str) for o in overrides):
        raise ConfigError(f"overrides: expected a list of 'key=value' strings, got {overrides!r}")
    # (an id Gymnasium no longer builds is replaced; the start line says which env is trained)
    return command_overrides(list(overrides))[0]


def compose(overrides: Sequence[str] = ()) -> DictConfig:
    """The experiment config that ``rlexp <overrides>`` would train, checked as the command checks a
    config before building anything (unknown keys, ranges, device). Pass it to ``rlexp.train``, changed
    or not: the run records the overrides that make it, so its command.txt re-runs it from the shell."""
    from hydra import compose as hydra_compose
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from rlexp.config.validation import job_config
    from rlexp.run.front_door import check_static

    overrides = checked_overrides(overrides)
    with hydra_session():
        try:
            full = hydra_compose(config_name="config", overrides=overrides, return_hydra_config=True)
            cfg = as_node(job_config(full))
            check_static(as_experiment(cfg), dict(full.hydra.runtime.choices), overrides)
        except (HydraException, OmegaConfBaseException) as err:
            raise user_error(err) from None
    key = id(cfg)
    _composed[key] = (weakref.ref(cfg, lambda _: _composed.pop(key, None)), overrides, copy.deepcopy(cfg))
    return cfg


def overrides_of(cfg: DictConfig) -> list[str]:
    """The overrides that compose ``cfg``: those it was composed with, then its changes since."""
    found = _composed.get(id(cfg))
    if found is None or found[0]() is not cfg:
        raise ConfigError("rlexp.train takes a config returned by rlexp.compose, or a list of overrides")
    _, overrides, composed = found
    return [*overrides, *changes(composed, cfg)]


def changes(before: DictConfig, after: DictConfig) -> list[str]:
    """Hydra overrides that turn ``before`` into ``after``: changed keys, added (+) and removed (~) ones."""
    return _changed(_plain(before), _plain(after), "")


def _plain(cfg: DictConfig) -> dict[str, Any]:
    return plain_dict(cfg, resolve=False, enum_to_str=True)


def _changed(before: dict[str, Any], after: dict[str, Any], prefix: str) -> list[str]:
    out = []
    for key, value in after.items():
        path = f"{prefix}{key}"
        if key not in before:
            out.append(f"+{path}={_value(value)}")
        elif isinstance(value, dict) and isinstance(before[key], dict):
            out += _changed(before[key], value, f"{path}.")
        elif value != before[key] or type(value) is not type(before[key]):
            out.append(f"{path}={_value(value)}")
    out += [f"~{prefix}{key}" for key in before if key not in after]
    return out


def _value(value: Any) -> str:
    """A value in Hydra's override grammar."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, list):
        return "[" + ",".join(_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{_value(v)}" for k, v in value.items()) + "}"
    text = str(value)
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"
