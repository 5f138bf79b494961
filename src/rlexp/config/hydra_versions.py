"""What differs between Hydra 1.3 and 1.4 (with OmegaConf 2.3 and 2.4) for rlexp, in one place: the
execution whitelist, ``version_base``, the resolver registry. Dropping 1.3 later empties this module.

What a config may make Hydra call: Hydra 1.4 checks each ``_target_`` that ``instantiate()`` resolves,
and each callable of a logging config it applies, against a whitelist the calling code gives (none given:
a deprecation warning today, an error from Hydra 1.5). rlexp gives it the names the config holds as
written text: a config the user composed names what the user chose; a run dir's config names only what
rlexp's allow-list let through before anything was built (rlexp.rundir.trust: the policy). Hydra then
refuses, at the call, any other name (one an interpolation or resolver would compute) and its own
blocklist (``os.system``...). Hydra's own objects (rlexp's console formatter, its callbacks) are named in
``HYDRA_TARGETS``. Hydra 1.3 has no such check: there, rlexp's allow-list alone decides, as before.

It is also the one adapter for what Hydra gives only by a private name (``JobReturn._return_value``, on 1.3
and 1.4 alike): no other module of rlexp or its plugins reads one (tests/test_architecture.py)."""

from __future__ import annotations

import inspect
import logging
import typing
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

import hydra.utils
import omegaconf
from hydra.core.utils import JobReturn
from omegaconf import DictConfig, ListConfig, OmegaConf

_OMEGACONF = tuple(int(part) for part in omegaconf.__version__.split(".")[:2])
# (None on Hydra 1.3)
_WHITELIST = getattr(hydra.utils, "execution_whitelist", None)
# Hydra's name resolvers: the dotted name in their ``path`` is what they call
NAME_RESOLVERS = ("hydra.utils.get_class", "hydra.utils.get_method", "hydra.utils.get_object")
# what Hydra itself builds from rlexp's configs: the logging config's formatter and filter (conf/hydra/*_logging)
# and the callbacks of conf/config.yaml (Hydra adds its own logging handlers to any whitelist)
HYDRA_TARGETS = (
    "rlexp.commands.console.ConsoleFormatter",
    "rlexp.commands.console.BelowWarning",
    "rlexp.run.front_door.FrontDoor",
    "rlexp.run.seed_report.SeedReport",
)


def has_whitelist() -> bool:
    """Whether this Hydra checks targets against an execution whitelist (1.4 and later)."""
    return _WHITELIST is not None


def version_base() -> dict[str, Any]:
    """Hydra 1.3 is asked for its 1.3 defaults; 1.4 deprecates ``version_base`` (its defaults are those)."""
    return {} if has_whitelist() else {"version_base": "1.3"}


def main_options() -> dict[str, Any]:
    """``hydra.main``'s options: on 1.4, the whitelist of what Hydra builds itself."""
    return {"execution_whitelist": list(HYDRA_TARGETS)} if has_whitelist() else version_base()


def register_resolver(name: str, resolver: Callable[..., Any]) -> None:
    """OmegaConf 2.4's ``register_resolver`` (it deprecates ``register_new_resolver``); 2.3's
    ``register_resolver`` is the old kind, whose arguments are strings only."""
    if _OMEGACONF >= (2, 4):
        OmegaConf.register_resolver(name, resolver, replace=True)  # type: ignore[call-arg]  # (2.4's: 2.3's takes no replace)
    else:
        OmegaConf.register_new_resolver(name, resolver, replace=True)


@contextmanager
def hydra_objects() -> Iterator[None]:
    """Hydra's own objects (the logging config, the callbacks) built outside ``hydra.main``: rlexp's
    compose path (``rlexp check``, the Python API)."""
    with _WHITELIST(list(HYDRA_TARGETS)) if _WHITELIST is not None else nullcontext():
        yield


def named_targets(node: Any) -> list[str]:
    """Every dotted name a config node holds as text: ``_target_`` values and the paths of Hydra's name
    resolvers (not what an interpolation would compute: that is not on the list, so Hydra refuses it)."""
    raw = OmegaConf.to_container(node, resolve=False) if isinstance(node, (DictConfig, ListConfig)) else node
    found: list[str] = []
    stack = [raw]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            target = item.get("_target_")
            if isinstance(target, str) and "${" not in target:
                found.append(target)
                path = item.get("path")
                if target in NAME_RESOLVERS and isinstance(path, str) and "${" not in path:
                    found.append(path)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return sorted(set(found))


def _quietly_got(name: str) -> Any:
    """``hydra.utils.get_object`` without the error line Hydra logs when the name does not import: the
    instantiation that follows says it, once, naming the key."""
    hydra_log = logging.getLogger("hydra.utils")
    disabled, hydra_log.disabled = hydra_log.disabled, True
    try:
        return hydra.utils.get_object(name)
    finally:
        hydra_log.disabled = disabled


def _with_definitions(names: list[str]) -> list[str]:
    """The names, the name each is defined under where that differs, and the class a factory says it
    returns (``rlexp.builders.schedules.linear`` returns a ``LinearSchedule``, a callable Hydra checks as well).
    A name that does not import is left to Hydra's own error."""
    found = set(names)
    for name in names:
        try:
            obj = _quietly_got(name)
        except Exception:  # (Hydra says why, naming the key)
            continue
        try:  # (annotations that do not resolve here, e.g. names imported for type checking only: no class)
            made = typing.get_type_hints(obj).get("return") if inspect.isfunction(obj) else None
        except Exception:
            made = None
        for defined in (obj, made):
            module, qualname = getattr(defined, "__module__", None), getattr(defined, "__qualname__", None)
            if inspect.isclass(defined) or inspect.isfunction(defined):
                found.add(f"{module}.{qualname}")
    return sorted(found)


def instantiate(node: Any, *args: Any, **kwargs: Any) -> Any:
    """``hydra.utils.instantiate`` allowing the names ``node`` holds (``named_targets``) and no other."""
    if _WHITELIST is not None:
        kwargs["_execution_whitelist_"] = _with_definitions(named_targets(node))
    return hydra.utils.instantiate(node, *args, **kwargs)


def job_value(job: JobReturn) -> Any:
    """What a job returned, or the exception of a failed one: ``JobReturn._return_value``. Its public
    ``return_value`` raises a failed job's exception, and the sweeper must tell Optuna how a trial ended
    (pruned, diverged, failed: the exception's type and message) without raising it."""
    return job._return_value
