"""A search's trials' configs composed from one composition of what they share, each trial's values set on a copy.

Hydra's launchers compose every job's config from scratch (``load_sweep_config``): the defaults list built
and every config file read, parsed and merged again, about 0.15-0.2 s a trial on a core of this machine. A
search's trials differ only in the values that the sweeper sets last: the sampled keys, the seed, the run's
subdir and the trial it reports to (rlexp.sweeper.trial_runs.job_overrides). Hydra applies such ``key=value``
overrides one by one after composing the rest (``OmegaConf.update`` with merge, in their order), then records
them (``hydra.overrides``, ``hydra.job.override_dirname``). ``TrialConfigs`` does the same on a copy of the
composition of the overrides before them, composed once; the first trial of each is also composed by Hydra
and compared whole, and where the two differ, or an override is anything else, Hydra composes every trial.
"""

from __future__ import annotations

import copy
import logging
import os
import re
import threading
from dataclasses import dataclass
from typing import Any

from hydra.core.config_loader import ConfigLoader
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Override
from omegaconf import DictConfig, OmegaConf

log = logging.getLogger(__name__)
# the hydra.* keys a trial sets by value that Hydra reads only after composing (hydra.searchpath, say, is
# read before; hydra.runtime.* and hydra.job.override_dirname are Hydra's to set)
_HYDRA_VALUES = ("hydra.sweep.", "hydra.job.env_set.")


@dataclass
class _Shared:
    """The composition of the overrides that trials share, its task overrides, and whether a trial composed
    from it was found equal to Hydra's own composition (None: not compared yet)."""

    config: DictConfig
    task: list[Override]
    same: bool | None = None


class TrialConfigs(ConfigLoader):
    """Hydra's config loader for the launcher of a search's trials: ``load_sweep_config`` as above, all else
    Hydra's. A copy pickled into a job's process (submitit) composes as Hydra does."""

    def __init__(self, loader: ConfigLoader) -> None:
        self.loader = loader
        self._shared: dict[tuple[int, tuple[str, ...]], _Shared] | None = {}
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        return {"loader": self.loader}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.loader, self._shared, self._lock = state["loader"], None, threading.Lock()

    def load_sweep_config(self, master_config: DictConfig, sweep_overrides: list[str]) -> DictConfig:
        found = self._from_shared(master_config, list(sweep_overrides))
        if found is None:
            return self.loader.load_sweep_config(master_config, sweep_overrides)
        shared, config = found
        if shared.same is None:  # the first trial: compared with Hydra's composition, whole
            hydras = self.loader.load_sweep_config(master_config, sweep_overrides)
            shared.same = OmegaConf.to_container(config, resolve=False) == OmegaConf.to_container(hydras, resolve=False)
            if not shared.same:
                log.debug("the trials' configs differ from Hydra's composition: Hydra composes each")
            return hydras
        return config

    def _from_shared(self, master_config: DictConfig, overrides: list[str]) -> tuple[_Shared, DictConfig] | None:
        """The trial's config: its trailing ``key=value`` overrides set on the composition of those before them
        (None: Hydra composes it whole)."""
        if self._shared is None:
            return None
        try:
            parsed = OverridesParser.create().parse_overrides(overrides)
            count = len(parsed)  # the overrides before the trailing ones that set a value
            while count and self._sets_a_value(parsed[count - 1]):
                count -= 1
            if count == len(parsed):
                return None
            key = (id(master_config), tuple(overrides[:count]))
            with self._lock:
                shared = self._shared.get(key)
                if shared is None:
                    composed = self.loader.load_sweep_config(master_config, list(key[1]))
                    task = [o for o in parsed[:count] if not o.is_hydra_override()]
                    shared = self._shared[key] = _Shared(composed, task)
                if shared.same is False:
                    return None
                config = copy.deepcopy(shared.config)
            _set(config, shared.task, parsed[count:], master_config)
            return shared, config
        except Exception:  # (Hydra's own composition of the job says what is wrong, in its words)
            return None

    def _sets_a_value(self, override: Override) -> bool:
        """A ``key=value`` override that Hydra applies after composing: not a group's choice (nor a package's),
        an addition, a deletion, a sweep, or a hydra key read while composing."""
        key = override.key_or_group
        if override.package is not None or override.is_sweep_override() or override.is_delete():
            return False
        if override.is_add() or override.is_force_add():
            return False
        if key.startswith("hydra.") or key == "hydra":
            return key.startswith(_HYDRA_VALUES)
        return not any(source.is_group(key) for source in self.loader.get_sources())

    def load_configuration(self, *args: Any, **kwargs: Any) -> DictConfig:
        return self.loader.load_configuration(*args, **kwargs)

    def get_search_path(self) -> Any:
        return self.loader.get_search_path()

    def get_sources(self) -> Any:
        return self.loader.get_sources()

    def list_groups(self, parent_name: str) -> Any:
        return self.loader.list_groups(parent_name)

    def get_group_options(self, *args: Any, **kwargs: Any) -> Any:
        return self.loader.get_group_options(*args, **kwargs)

    def compute_defaults_list(self, *args: Any, **kwargs: Any) -> Any:
        return self.loader.compute_defaults_list(*args, **kwargs)


def _set(config: DictConfig, shared_task: list[Override], overrides: list[Override], master: DictConfig) -> None:
    """A trial's values set on (a copy of) the shared composition, and recorded, as Hydra's composition does."""
    for override in overrides:
        OmegaConf.update(config, override.key_or_group, override.value(), merge=True)
    for override in overrides:
        (config.hydra.overrides.hydra if override.is_hydra_override() else config.hydra.overrides.task).append(
            override.input_line
        )
    for key in config.hydra.job.env_copy:
        config.hydra.job.env_set[key] = os.environ[key]
    config.hydra.runtime.cwd = os.getcwd()
    named = config.hydra.job.config.override_dirname
    lines = sorted(
        str(o.input_line)
        for o in [*shared_task, *(o for o in overrides if not o.is_hydra_override())]
        if o.key_or_group not in named.exclude_keys
    )
    config.hydra.job.override_dirname = re.sub("[=]", named.kv_sep, named.item_sep.join(lines))
    OmegaConf.copy_cache(from_config=master, to_config=config)
