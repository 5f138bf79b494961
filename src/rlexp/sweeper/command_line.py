"""A sweep's command line: its overrides read (searched or fixed; a ``seed`` refused), and shown as rlexp
prints and records it, a storage's password as ``***``."""

from __future__ import annotations

import logging
import sys

from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import DictConfig, open_dict, read_write

from rlexp.errors import ConfigError
from rlexp.search.storage import shown

log = logging.getLogger(__name__)


def sweep_overrides(arguments: list[str], seed: int) -> tuple[list[str], list[str]]:
    """The command's overrides that sweep (``choice(...)``...) and those that fix a value.

    A search gives each trial its seed (SweepSettings.trial_seed): a ``seed`` on the command line would be
    overridden in every trial without a word, or searched over as if it were a hyperparameter."""
    parsed = OverridesParser.create().parse_overrides(arguments)
    for override in parsed:
        if override.key_or_group == "seed":
            raise ConfigError(
                f"{override.input_line}: a search seeds trial k with hydra.sweeper.seed + k*seeds_per_trial; "
                f"give hydra.sweeper.seed instead (now {seed})"
            )
    # (Hydra types input_line optional; it is the argument it parsed, so the arguments are kept instead)
    lines = list(zip(arguments, parsed, strict=True))
    sweeps = [line for line, o in lines if o.is_sweep_override()]
    return sweeps, [line for line, o in lines if not o.is_sweep_override()]


def hide_password(config: DictConfig, url: str) -> None:
    """The storage's password stays in this process: the trials' configs are composed from the
    sweep's overrides, which Hydra writes into every trial's .hydra/, so they get the URL with
    ``***``; the jobs get the real one from the environment (rlexp.search.study.ENV_STORAGE)."""
    with read_write(config.hydra), open_dict(config.hydra):
        config.hydra.sweeper.storage = shown(url)
        config.hydra.overrides.hydra = [shown_override(o) for o in config.hydra.overrides.hydra]
    log.warning(
        "hydra.sweeper.storage holds a password: rlexp prints and writes it as *** (the commands it "
        "prints too); give it as PGPASSWORD or in ~/.pgpass instead (docs: guides/security.md)"
    )


def shown_override(override: str) -> str:
    key, _, value = override.partition("=")
    return f"{key}={shown(value)}" if key.lstrip("+") == "hydra.sweeper.storage" else override


def argv_shown() -> list[str]:
    """This command's arguments as rlexp prints and records them (the storage's password as ***)."""
    return [shown_override(word) for word in sys.argv[1:]]
