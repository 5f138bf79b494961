"""`hydra/sweeper=optuna`: Hydra's glue around rlexp's search loop (rlexp.sweeper.loop), which does the search.

Hydra builds the sweeper from `hydra.sweeper` (its schema: config.py), hands it the launcher's context,
then the command's overrides; the loop lives in rlexp, under its layers and tests."""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import logging
from typing import Any

from hydra.core.plugins import Plugins
from hydra.plugins.sweeper import Sweeper
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig

import hydra_plugins.rlexp_optuna_sweeper.config  # noqa: F401  (registers the schema)
from rlexp.sweeper.composing import TrialConfigs
from rlexp.sweeper.loop import Sweep
from rlexp.sweeper.settings import SweepSettings

log = logging.getLogger(__name__)


class OptunaSweeper(Sweeper):
    def __init__(self, **settings: Any) -> None:
        """``settings``: hydra.sweeper's values (config.OptunaSweeperConf)."""
        self.settings = SweepSettings.of(**settings)

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        # (each trial's config composed from one composition of what the trials share: rlexp.sweeper.composing)
        # (a copy: Hydra 1.4's context carries its execution whitelist too)
        trials = dataclasses.replace(hydra_context, config_loader=TrialConfigs(hydra_context.config_loader))
        launcher = Plugins.instance().instantiate_launcher(
            hydra_context=trials, task_function=task_function, config=config
        )
        if importlib.util.find_spec("hydra_plugins.hydra_optuna_sweeper") is not None:
            log.warning(
                "hydra-optuna-sweeper is installed too and also defines hydra/sweeper=optuna; rlexp's configs "
                "come first on Hydra's search path, so this search runs rlexp's sweeper (%s)",
                __name__,
            )
        # (an earlier study's config is composed again: rlexp.sweeper.opening)
        compose = functools.partial(hydra_context.config_loader.load_sweep_config, config)
        self.search = Sweep(self.settings, config, launcher, compose)

    def sweep(self, arguments: list[str]) -> None:
        self.search.run(arguments)
