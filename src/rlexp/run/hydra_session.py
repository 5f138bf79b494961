"""rlexp's configs composed outside a Hydra run, with Hydra's compose API: for `rlexp check` (a config
checked and built as a run's, with no run dir) and for the Python API (rlexp.api); and what both
Hydra's run and its compose API need registered first."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@functools.cache
def register_hydra() -> None:
    """rlexp's typed schemas in Hydra's ConfigStore and its plugins in Hydra's registry, for the command and
    the Python API. Hydra finds plugins by walking the hydra_plugins namespace package, which misses
    modules that an editable install maps from src/; registering them makes both install kinds work.

    The one import of the plugins in rlexp, for this registration only (tests/test_architecture.py): they are
    Hydra's glue over rlexp.sweeper and rlexp.cluster, and import rlexp, never the other way round."""
    from hydra.core.plugins import Plugins

    from hydra_plugins.rlexp_launcher.launcher import LocalParallelLauncher
    from hydra_plugins.rlexp_optuna_sweeper.sweeper import OptunaSweeper
    from rlexp.config.store import register_configs

    register_configs()
    Plugins.instance().register(OptunaSweeper)
    Plugins.instance().register(LocalParallelLauncher)


@contextmanager
def hydra_session() -> Iterator[Any]:
    """rlexp's configs in Hydra's global state for the length of one call, and the caller's state back
    after it (also after an error): Hydra holds one global instance, which a notebook that composes or
    trains twice, or a caller's own Hydra app, would otherwise find taken. Yields Hydra's instance."""
    from hydra import initialize_config_module
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.hydra_config import HydraConfig
    from hydra.initialize import get_gh_backup, restore_gh_from_backup

    from rlexp.config.hydra_versions import version_base

    register_hydra()
    hydra_state, job_config = get_gh_backup(), HydraConfig.instance().cfg  # (a caller's own Hydra app)
    GlobalHydra.instance().clear()
    try:
        with initialize_config_module(config_module="rlexp.conf", job_name="rlexp", **version_base()):
            yield GlobalHydra.instance().hydra
    finally:
        restore_gh_from_backup(hydra_state)
        HydraConfig.instance().cfg = job_config


def command_overrides(args: list[str]) -> tuple[list[str], str | None]:
    """A command line's overrides as rlexp composes them: numbers as the command takes them
    (n_timesteps=1e5), a link to a run dir as the dir it points to now (trained_agent=outputs/<...>/latest),
    and the env preset that an ``env.id=`` asks for; with the line saying which env is trained where the
    id itself is replaced (None otherwise)."""
    from rlexp.config.env_routing import routed
    from rlexp.config.overrides import links_resolved, whole_numbers

    return routed(links_resolved(whole_numbers(args)))
