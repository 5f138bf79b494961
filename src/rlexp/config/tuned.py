"""Tuned hyperparameter files (conf/tuned/<algo>_<env>.yaml): which exist, and which one a run uses."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any

import yaml
from hydra.core.hydra_config import HydraConfig

from rlexp.config.algorithms import ALGORITHMS
from rlexp.config.validation import did_you_mean
from rlexp.errors import ConfigError


def shipped_tuned() -> list[str]:
    """The tuned files that ship with rlexp (conf/tuned), whatever the search path holds beside them."""
    return sorted(
        p.name.removesuffix(".yaml") for p in (files("rlexp.conf") / "tuned").iterdir() if p.name.endswith(".yaml")
    )


def tuned_options() -> list[str]:
    """The tuned files on this command's config search path (hydra.searchpath included); the shipped
    ones outside a Hydra app."""
    return options_on_search_path("tuned") if HydraConfig.initialized() else shipped_tuned()


def options_on_search_path(group: str) -> list[str]:
    """A config group's options on the running command's search path: rlexp's, and those of the dirs and
    packages a ``hydra.searchpath`` adds (a user's own conf dir)."""
    names: set[str] = set()
    for source in HydraConfig.get().runtime.config_sources:
        try:
            if source.schema == "file":
                folder: Any = Path(source.path) / group
            elif source.schema == "pkg":
                folder = files(source.path.replace("/", ".")) / group
            else:  # structured configs: options are YAML
                continue
            if folder.is_dir():
                names.update(p.name.removesuffix(".yaml") for p in folder.iterdir() if p.name.endswith(".yaml"))
        except (ImportError, OSError):
            continue
    return sorted(names)


def check_tuned(choices: dict[str, Any], overrides: list[str]) -> None:
    """``tuned=<name>`` given explicitly must exist (the defaults list only skips a missing optional file)."""
    named = [o.split("=", 1)[1] for o in overrides if o.lstrip("+").startswith("tuned=")]
    options = tuned_options()
    if named and named[-1] not in options:
        algo = choices.get("algo")
        same_algo = [t for t in options if t.startswith(f"{algo}_")]
        hint = did_you_mean(named[-1], options) or f" (for {algo}: {', '.join(same_algo) or 'none'})"
        raise ConfigError(f"tuned={named[-1]}: no such tuned file{hint}")


def tuned_note(
    choices: dict[str, Any],
    *,
    env_id: str,
    tuned_file: str | None,
    tuned_env_id: str | None,
    tuned_source: str | None,
    tuned_departures: Sequence[str],
) -> str:
    """Which tuned file applies, in one line, for the start of a run; the ``tuned_*`` parameters are the
    experiment config's keys of those names (what the tuned file set), ``env_id`` its ``env.id``."""
    if tuned_file:
        source = tuned_source or f"for {tuned_env_id}"
        departures = f"; rlexp departs in {', '.join(tuned_departures)}" if tuned_departures else ""
        return f"tuned hyperparameters: tuned/{tuned_file}.yaml ({source}{departures}) on {env_id}"
    if choices.get("tuned") is None:
        return "tuned hyperparameters: off (~tuned); the algorithm's defaults"
    # (the env id trained, not only the preset's name: env=cartpole env.id=Hopper-v5 trains Hopper)
    return f"no tuned values for {choices.get('algo')} on {env_id}: SB3 defaults (rlexp list shows the tuned pairs)"


@dataclass(frozen=True)
class TunedPair:
    """One shipped tuned file, as `rlexp list` shows it."""

    file: str
    algo: str
    env: str  # the env preset
    env_id: str  # the id the preset builds ("atari": any game)
    family: str
    source: str
    departures: tuple[str, ...]
    n_timesteps: int


def tuned_pairs() -> list[TunedPair]:
    """Every shipped tuned file (conf/tuned/<algo>_<env>.yaml), read as YAML: nothing is composed."""
    conf = files("rlexp.conf")
    algos = sorted((a.name for a in ALGORITHMS), key=len, reverse=True)  # (the longest first: a name may start another)
    families: dict[str, str] = {}
    pairs = []
    for path in sorted((conf / "tuned").iterdir(), key=lambda p: p.name):
        if not path.name.endswith(".yaml"):
            continue
        stem = path.name.removesuffix(".yaml")
        algo = next(a for a in algos if stem.startswith(f"{a}_"))
        env = stem[len(algo) + 1 :]
        if env not in families:
            preset = yaml.safe_load((conf / "env" / f"{env}.yaml").read_text()) or {}
            families[env] = preset.get("family") or ""
        data = yaml.safe_load(path.read_text()) or {}
        pairs.append(
            TunedPair(
                stem,
                algo,
                env,
                str(data.get("tuned_env_id")),
                families[env],
                str(data.get("tuned_source") or ""),
                tuple(data.get("tuned_departures") or ()),
                int(data.get("n_timesteps", 0)),
            )
        )
    return pairs
