"""What a run dir may make rlexp import and call when a command reads it: the trust boundary.

A run dir can come from anyone, and opening it rebuilds its env, wrappers and agent from its
config.yaml: every ``_target_`` there (and every dotted name handed to ``hydra.utils.get_class`` and
its kind, and an env id's ``module:`` part, which gymnasium imports) names code that would run.
Hydra's own refusal of a few names (``os.system``, ``subprocess.call``) is best effort, as Hydra says;
rlexp checks the whole config against an allow-list before anything is built, and refuses the first
name outside it in one line, saying how to trust it.

Allowed: the classes of SB3, sb3-contrib, sbx, gymnasium's and MiniGrid's wrappers, torch's layers,
activations and optimizers, Optuna's samplers and pruners (a class by its name: ``stable_baselines3.PPO``,
never ``stable_baselines3.PPO.load``, nor a module's functions such as SB3's ``load_from_pkl``); rlexp's
own schedules and wrappers; gymnasium's registered env ids and the env families rlexp registers. Anything
else only when the user trusts its package: ``--trust PKG`` on the commands, ``trust=[...]`` in the
Python API, or the ``RLEXP_TRUST`` setting (``RLEXP_TRUST=my_pkg,other_pkg``).
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Collection, Iterable, Iterator
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from rlexp.config.algorithms import ALGORITHMS
from rlexp.config.env_families import FAMILIES
from rlexp.config.hydra_versions import NAME_RESOLVERS  # (allowed when the name they resolve is)
from rlexp.errors import ConfigError
from rlexp.rundir.contract import CONFIG_FILE, read_config, read_config_dict

ENV_TRUST = "RLEXP_TRUST"
# modules whose classes (a capitalised last name) a run may name: algorithms, policies, layers, wrappers,
# buffers, noise, schedules, samplers. Not SB3's logger, Monitor or vector envs, whose constructors open
# files or start processes, nor any module's functions (SB3's load_from_pkl, torch.load).
CLASS_MODULES = (
    "stable_baselines3", "stable_baselines3.common.buffers",
    "stable_baselines3.common.callbacks", "stable_baselines3.common.noise", "stable_baselines3.common.policies",
    "stable_baselines3.common.running_mean_std", "stable_baselines3.common.sb2_compat.",
    "stable_baselines3.common.torch_layers", "stable_baselines3.common.type_aliases", "stable_baselines3.common.utils",
    "stable_baselines3.common.vec_env.vec_normalize", "stable_baselines3.her.",
    "sb3_contrib", "sb3_contrib.common.", "sb3_contrib.ppo_mask.",
    "sbx", "sbx.",
    # the algorithms' own (rlexp.config.algorithms: PPO's stable_baselines3.ppo., CrossQ's sb3_contrib.crossq.)
    *(module for algorithm in ALGORITHMS for module in algorithm.modules),
    "gymnasium.wrappers", "gymnasium.wrappers.", "gymnasium.spaces", "gymnasium.spaces.",
    "torch.nn", "torch.nn.modules.", "torch.optim", "torch.optim.",
    "optuna.samplers", "optuna.pruners",
    # the env families' wrappers (SB3's atari_wrappers, minigrid.wrappers)
    *(module for family in FAMILIES for module in family.class_modules),
)  # fmt: skip
# classes of those modules that write files when built
WRITERS = {"RecordVideo", "RecordEpisodeStatistics", "CheckpointCallback", "EvalCallback"}
# rlexp's own modules whose callables a config names (schedules, wrappers): they build objects from values
RLEXP_MODULES = ("rlexp.builders.schedules", "rlexp.builders.wrappers")
# packages an env id's "module:" part may import: the env families' (rlexp.config.env_families), and Shimmy,
# Gymnasium's bindings of other env APIs
ENV_PACKAGES = {"shimmy", *(family.package for family in FAMILIES)}


# sbx pickles its whole policy into model.zip (JAX arrays, Flax modules, Optax's functions): trusting sbx
# trusts what its pickles name
STACKS = {"sbx": {"jax", "jaxlib", "flax", "optax"}}


def trusted_packages(given: Iterable[str] = ()) -> set[str]:
    """The packages the user trusts: ``given`` (--trust, trust=) and the RLEXP_TRUST setting (and, for
    sbx, the packages its pickles name)."""
    names = [*given, *os.environ.get(ENV_TRUST, "").split(",")]
    found = {n.strip() for name in names for n in name.split(",") if n.strip()}
    return found.union(*(STACKS.get(name, set()) for name in found))


def _in_package(name: str, packages: Collection[str]) -> bool:
    return any(name == p or name.startswith(f"{p}.") or name.startswith(f"{p}:") for p in packages)


def _class_module(module: str) -> bool:
    """A module whose classes are allowed: one of CLASS_MODULES (a trailing dot: it and its submodules)."""
    return any(module == m.rstrip(".") or (m.endswith(".") and module.startswith(m)) for m in CLASS_MODULES)


def allowed_object(obj: Any, name: str) -> bool:
    """Whether ``obj``, found for the last part ``name`` of a dotted path, is what the allow-list means: a
    class defined in a class module under that very name, or a callable of rlexp's own builders defined
    there (not an attribute reached through a module's imports: ``...wrappers.gym.wrappers.importlib...``)."""
    module = getattr(obj, "__module__", None) or ""
    if getattr(obj, "__qualname__", None) != name or name in WRITERS:
        return False
    if module in RLEXP_MODULES:
        return callable(obj)
    return inspect.isclass(obj) and _class_module(module)


def allowed(name: str, trusted: Collection[str] = ()) -> bool:
    """Whether a config may name ``name`` (a dotted callable) without the user trusting its package: the
    name passes the allow-list's rules as text, and the object it resolves to (importing only modules of
    the allowed packages) is itself an allowed class or builder."""
    if _in_package(name, trusted):
        return True
    module, _, last = name.rpartition(".")
    parts = name.split(".")
    if not module or any(not part or part.startswith("_") for part in parts):
        return False
    if module not in RLEXP_MODULES and not (last[:1].isupper() and _class_module(module)):
        return False
    try:
        from hydra.utils import get_object

        obj = get_object(name)
    except Exception:  # (not importable: not allowed)
        return False
    return allowed_object(obj, last)


def _names(node: Any, where: str = "") -> Iterator[tuple[str, Any]]:
    """(where, dotted name) for every callable a config names: ``_target_`` values, and the ``path`` of
    hydra's name resolvers."""
    if isinstance(node, dict):
        target = node.get("_target_")
        if "_target_" in node:
            yield f"{where}_target_", target
            if target in NAME_RESOLVERS:
                yield f"{where}path", node.get("path")
        for key, value in node.items():
            yield from _names(value, f"{where}{key}.")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _names(value, f"{where}{i}.")


def _interpolations(node: Any, where: str = "") -> Iterator[tuple[str, str]]:
    """Strings with an OmegaConf interpolation (``${...}``): a run writes its config resolved, so one found
    there was put in by hand, and could build a ``_target_`` the checks never see (``${oc.decode:...}``)."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _interpolations(value, f"{where}{key}.")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _interpolations(value, f"{where}{i}.")
    elif isinstance(node, str) and "${" in node:
        yield where.rstrip("."), node


def untrusted(config: dict[str, Any], trusted: Collection[str] = ()) -> list[tuple[str, str]]:
    """(key, name) of each callable or env module the config names that is neither allowed nor trusted,
    and of each interpolation in it."""
    found = list(_interpolations(config))
    for where, name in _names(config):
        if name in NAME_RESOLVERS:
            continue
        if not isinstance(name, str) or not allowed(name, trusted):
            found.append((where, str(name)))
    env_id = (config.get("env") or {}).get("id") if isinstance(config.get("env"), dict) else None
    if isinstance(env_id, str) and ":" in env_id:
        module = env_id.split(":", 1)[0]
        if module.split(".", 1)[0] not in ENV_PACKAGES and not _in_package(module, trusted):
            found.append(("env.id", env_id))
    return found


def check_trusted(config: dict[str, Any], run_dir: Path, trust: Iterable[str] = (), source: Path | None = None) -> None:
    """Refuses, in one line, a run dir whose config names code that is neither allowed nor trusted
    (nothing of it has been imported or called yet); ``source``: the file it was read from, where not the
    run's config.yaml (an RL Zoo run's config.yml)."""
    refused = untrusted(config, trusted_packages(trust))
    if not refused:
        return
    key, name = refused[0]
    if "${" in name:
        raise ConfigError(
            f"{source or run_dir / CONFIG_FILE}: {key} holds an interpolation ({name[:80]}), which a run's config never "
            "does (rlexp writes it resolved): edited by hand, not opened"
        )
    package = name.split(":", 1)[0].split(".", 1)[0] if key == "env.id" else name.split(".", 1)[0]
    more = f" (and {len(refused) - 1} more: {', '.join(n for _, n in refused[1:4])})" if len(refused) > 1 else ""
    raise ConfigError(
        f"{source or run_dir / CONFIG_FILE}: {key} names {name}{more}, which is not on rlexp's allow-list: opening "
        f"this run would run that code. If you trust the run's author, open it with --trust {package} "
        f"(or RLEXP_TRUST={package}; the Python API: trust=[{package!r}])"
    )


def read_trusted_config(run_dir: Path, trust: Iterable[str] = (), remedy: str = "choose another run dir") -> DictConfig:
    """The run's config (rlexp.rundir.contract.read_config), refused in one line where it names code
    outside the allow-list that ``trust`` (and RLEXP_TRUST) does not name: for the commands that build it."""
    cfg = read_config(run_dir, remedy)  # (unreadable: its one line first)
    check_trusted(read_config_dict(run_dir), run_dir, trust)  # what the file says, before the schema's defaults
    return cfg
