"""Typed schema of `hydra/sweeper=optuna`, with its defaults; rlexp's conf/hydra/sweeper/optuna.yaml chooses
the sampler and the pruner and names the study and its space.

No ``from __future__ import annotations`` here: Hydra's plugin scan runs a plugin module before it is in
sys.modules (a wheel's hydra_plugins/), where a dataclass's string annotations cannot be resolved."""

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Dict, Optional

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING


class SweepMode(str, Enum):
    """How n_jobs trials are kept running (docs/guides/tune.md, "Steady or batches")."""

    # a trial's slot gets the next trial as soon as it ends (pruned, failed, completed): no slot idles
    steady = "steady"
    # n_jobs trials at a time, the next n_jobs once all have ended: the same trials in the same order for a seed
    batch = "batch"


@dataclass
class OptunaSweeperConf:
    _target_: str = "hydra_plugins.rlexp_optuna_sweeper.sweeper.OptunaSweeper"
    # sampler and pruner: `_target_` nodes chosen from hydra/sweeper/sampler and hydra/sweeper/pruner
    sampler: Any = MISSING
    pruner: Any = MISSING
    direction: str = "maximize"
    # Optuna storage URL; null: a SQLite file in the sweep directory (sqlite:///<sweep dir>/study.db); any
    # Optuna RDB URL (postgresql://user:pw@host/db); journal:///path for a journal file
    storage: Optional[str] = None
    study_name: str = MISSING
    # trials this study should finish (completed, pruned or failed), counting those of earlier runs
    n_trials: int = 20
    # trials running at once
    n_jobs: int = 1
    # steady: each slot gets the next trial as soon as its trial ends; batch: n_jobs trials at a time, the
    # next n_jobs once all ended (repeatable: a seed proposes the same trials in the same order); Hydra's
    # in-process launcher (basic) runs one trial at a time either way
    mode: SweepMode = SweepMode.steady
    # stop when more than this fraction of the finished trials failed
    max_failure_rate: float = 0.25
    # cap on all trials of the study, across every sweeper process sharing it
    max_total_trials: Optional[int] = None
    # seeds the sampler; trial k trains with seeds seed + k * seeds_per_trial + (0 .. seeds_per_trial - 1)
    seed: int = 0
    # runs per trial, one per seed, trained one after another; the objective is their mean final eval
    seeds_per_trial: int = 1
    # parameter -> Hydra sweep expression: choice(...), range(...), interval(...), tag(log, interval(...))
    params: Dict[str, str] = field(default_factory=dict)
    # write optimization plots (PNG) next to the results
    plots: bool = True
    # robust selection: after the search, re-train the k best trials with retrain_seeds fresh seeds each
    # and pick the winner by its mean over them (0: the best single trial wins)
    retrain_top_k: int = 0
    retrain_seeds: int = 3


# at the root, not in hydra/sweeper: it is no sweeper option of its own
ConfigStore.instance().store(name="hydra_sweeper_optuna_schema", node=OptunaSweeperConf, provider="rlexp")
