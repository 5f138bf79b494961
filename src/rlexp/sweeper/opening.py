"""The study a sweep opens: created, or loaded when it was made for this search (refused otherwise, with a
new search's command), its sampler reseeded when it continues or is shared."""

from __future__ import annotations

import os
import shlex
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import optuna
from omegaconf import DictConfig

from rlexp.config.hydra_versions import instantiate
from rlexp.config.overrides import as_override
from rlexp.errors import ConfigError
from rlexp.search.storage import open_storage, shown
from rlexp.search.study import (
    SEARCH_ATTR,
    SEARCH_COMMAND_ATTR,
    SEARCH_CONFIG_ATTR,
    SearchConfig,
    owner,
    recorded_overrides,
    search_changes,
    search_record,
    searched,
)
from rlexp.sweeper.command_line import argv_shown
from rlexp.sweeper.settings import SweepSettings

# the sweep's overrides composed again (Hydra's ConfigLoader.load_sweep_config on the sweep's config)
Compose = Callable[[list[str]], DictConfig]


def default_storage(sweep_dir: Path) -> str:
    """The storage of a search that names none (hydra.sweeper.storage=null): a SQLite file in its sweep dir."""
    return f"sqlite:///{sweep_dir / 'study.db'}"


def open_study(
    settings: SweepSettings,
    url: str,
    config: DictConfig,
    sweep_dir: Path,
    space: dict[str, Any],
    fixed: list[str],
    compose: Compose,
) -> optuna.Study:
    """The study, in the storage at ``url``; nothing is written to it when any setting is wrong, nor when it was
    made for another search (``space``: the distributions searched; ``fixed``: the overrides that fix values)."""
    if url.startswith("sqlite:///"):
        Path(url[len("sqlite:///") :]).parent.mkdir(parents=True, exist_ok=True)
    storage = open_storage(url)
    name, direction = settings.study_name, settings.direction
    assert direction in ("minimize", "maximize"), "SweepSettings.check refuses any other direction"
    existing = {s.study_name: s for s in optuna.get_all_study_summaries(storage)}
    if name in existing and (made := existing[name].direction.name.lower()) != direction:
        raise ConfigError(
            f"hydra.sweeper.study_name={name} exists in {shown(url)} with direction={made}, not {direction}"
        )
    samplers = {"sampler": settings.sampler, "pruner": settings.pruner}
    if name in existing:
        study = optuna.load_study(storage=storage, study_name=name, **samplers)
    else:  # (load_if_exists: another worker of a shared study may create it at the same moment)
        study = optuna.create_study(
            storage=storage, study_name=name, direction=direction, load_if_exists=True, **samplers
        )
    words, now = search_record(space, fixed), SearchConfig.of(config, searched(space), fixed)
    recorded, by_config = study.user_attrs.get(SEARCH_ATTR), study.user_attrs.get(SEARCH_CONFIG_ATTR)
    if recorded is None and by_config is None:  # a new study (or one an early release made): its own
        study.set_user_attr(SEARCH_ATTR, words)  # (as typed: what releases before the config's compare)
        study.set_user_attr(SEARCH_CONFIG_ATTR, now.record())
        study.set_user_attr(SEARCH_COMMAND_ATTR, shlex.join(["rlexp", *argv_shown()]))
        return study
    if by_config is not None:
        changes = SearchConfig.from_record(by_config).changes(now)
    elif recorded == words:
        changes = []
    else:  # a study of an earlier release, typed otherwise: the config its words compose
        assert recorded is not None, "a study with neither record returned above"
        before = _composed(recorded, compose)
        changes = search_changes(recorded, words) if before is None else before.changes(now)
    if changes:
        command = study.user_attrs.get(SEARCH_COMMAND_ATTR, "the command that made it")
        raise ConfigError(_another_search(settings.study_name, sweep_dir, url, changes, command))
    if by_config is None:  # (from now on compared by its config)
        study.set_user_attr(SEARCH_CONFIG_ATTR, now.record())
    return study


def _composed(recorded: dict[str, str], compose: Compose) -> SearchConfig | None:
    """The search of a study that an earlier release made, which kept only its command's words
    (search_record): its fixed overrides composed again, with this command's ``hydra.*`` ones; None when
    they no longer compose (a key it added with ``+``, an option since removed)."""
    fixed, space = recorded_overrides(recorded)
    try:
        config = compose(fixed)
    except Exception:  # (Hydra's and OmegaConf's errors: the words are compared instead)
        return None
    return SearchConfig.of(config, space, fixed)


def _another_search(study_name: str, sweep_dir: Path, url: str, changes: list[str], command: str) -> str:
    """Why a study made for another search is not continued, and a new one's command line."""
    changed = "; ".join(changes[:4]) + (f"; and {len(changes) - 4} more" if len(changes) > 4 else "")
    free = next(
        sweep_dir.with_name(f"{sweep_dir.name}-{n}")
        for n in range(2, 10_000)
        if not sweep_dir.with_name(f"{sweep_dir.name}-{n}").exists()
    )
    new = [as_override("hydra.sweep.dir", os.path.relpath(free) if free.is_relative_to(Path.cwd()) else str(free))]
    if url != default_storage(sweep_dir):  # a shared storage: the study's name is the key
        new.append(f"hydra.sweeper.study_name={study_name}-{free.name.rsplit('-', 1)[1]}")
    replaced = {line.split("=")[0] for line in new}
    return (
        f"study {study_name} in {shown(url)} was made for another search ({changed}); a new search: "
        f"{shlex.join(['rlexp', *[w for w in argv_shown() if w.split('=')[0] not in replaced], *new])}; "
        f"this one: {command}"
    )


def reseed(study: optuna.Study, settings: SweepSettings, sampler: DictConfig, shared: bool) -> None:
    """A fixed seed would replay the first sweep's proposals in a resumed study, and two sweepers
    sharing a study would propose the same startup trials: mix in the study's size and this process.
    A new study with the default storage keeps the plain seed (a repeatable sweep). ``sampler``: its node."""
    if not study.trials and not shared:
        return
    seed = zlib.crc32(f"{settings.seed}:{len(study.trials)}:{owner()}".encode())
    if "seed" in sampler:
        study.sampler = instantiate(sampler, seed=seed)
