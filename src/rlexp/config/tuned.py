"""Tuned hyperparameter files (conf/tuned/<algo>_<env>.yaml): which exist, and which one a run uses."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path
from typing import Any

from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from rlexp.config.validation import did_you_mean
from rlexp.errors import ConfigError


def tuned_options() -> list[str]:
    """The tuned files on this command's config search path (hydra.searchpath included); the shipped
    ones outside a Hydra app."""
    if not HydraConfig.initialized():
        return sorted(
            p.name.removesuffix(".yaml") for p in (files("rlexp.conf") / "tuned").iterdir() if p.name.endswith(".yaml")
        )
    names: set[str] = set()
    for source in HydraConfig.get().runtime.config_sources:
        try:
            if source.schema == "file":
                folder: Any = Path(source.path) / "tuned"
            elif source.schema == "pkg":
                folder = files(source.path.replace("/", ".")) / "tuned"
            else:  # structured configs: tuned files are YAML
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


def tuned_note(cfg: DictConfig, choices: dict[str, Any]) -> str:
    """Which tuned file applies, in one line, for the start of a run."""
    if cfg.tuned_file:
        return f"tuned hyperparameters: tuned/{cfg.tuned_file}.yaml (for {cfg.tuned_env_id})"
    if choices.get("tuned") is None:
        return "tuned hyperparameters: off (~tuned); the algorithm's defaults"
    # (the env id trained, not only the preset's name: env=cartpole env.id=Hopper-v5 trains Hopper)
    env = choices.get("env")
    trained = f"env.id={cfg.env.id}" if env is None else f"{env} with env.id={cfg.env.id}"
    return f"tuned hyperparameters: none for {choices.get('algo')} x {trained}; the algorithm's defaults"
