"""A sweep's settings: the values of ``hydra.sweeper`` (their schema, defaults and meaning:
hydra_plugins.rlexp_optuna_sweeper.config), checked before anything runs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import optuna
from omegaconf import DictConfig

from rlexp.config.hydra_versions import instantiate
from rlexp.errors import ConfigError


@dataclass(frozen=True)
class SweepSettings:
    sampler: optuna.samplers.BaseSampler
    pruner: optuna.pruners.BasePruner
    direction: str
    storage: str | None
    study_name: str
    n_trials: int
    n_jobs: int
    max_failure_rate: float
    max_total_trials: int | None
    seed: int
    seeds_per_trial: int
    params: dict[str, str]
    plots: bool
    retrain_top_k: int = 0
    retrain_seeds: int = 3
    mode: str = "steady"  # (steady or batch: the schema's SweepMode, as its value)

    @classmethod
    def of(cls, sampler: Any, pruner: Any, params: DictConfig | dict[str, Any] | None, **values: Any) -> SweepSettings:
        """From the node Hydra gives the plugin: the sampler's and the pruner's ``_target_`` nodes built (Hydra
        1.3 builds them, 1.4 hands a plugin its config as it is), the space as text."""
        built = [instantiate(n) if isinstance(n, DictConfig) else n for n in (sampler, pruner)]
        space = {str(k): str(v) for k, v in (params or {}).items()}
        mode = values.pop("mode", "steady")
        return cls(sampler=built[0], pruner=built[1], params=space, mode=str(getattr(mode, "value", mode)), **values)

    def check(self) -> None:
        """The values no type rules out that a search cannot run with, refused in one line."""
        if self.direction not in ("maximize", "minimize"):
            raise ConfigError(f"hydra.sweeper.direction={self.direction}: choose maximize or minimize")
        for name in ("n_trials", "n_jobs", "seeds_per_trial", "retrain_seeds"):
            if getattr(self, name) < 1:
                raise ConfigError(f"hydra.sweeper.{name} must be >= 1, got {getattr(self, name)}")
        if not 0.0 <= self.max_failure_rate <= 1.0:
            raise ConfigError(f"hydra.sweeper.max_failure_rate must be in [0, 1], got {self.max_failure_rate}")

    def trial_seed(self, number: int) -> int:
        """The first seed of trial ``number``; its seeds never overlap another trial's."""
        return self.seed + number * self.seeds_per_trial
