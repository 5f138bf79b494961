"""The reference results that ship with rlexp (rlexp.data/reference/<tuned file>.json, written by
benchmarks/reference.py from real runs over seeds at the tuned budget), read and checked: what a tuned
pair reaches over seeds, at its budget and along its learning curve."""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any

import numpy as np

from rlexp.errors import ConfigError
from rlexp.rundir.contract import moved_targets

FORMAT = 1
MIN_SEEDS = 5  # fewer reference seeds say nothing about a distribution


@dataclass(frozen=True)
class Reference:
    name: str  # the tuned file (ppo_cartpole)
    env_id: str
    n_timesteps: int
    finals: np.ndarray  # one final evaluation per reference seed
    curve_steps: np.ndarray  # the periodic evaluations' steps, and each seed's mean at them (seeds x steps)
    curves: np.ndarray
    config: dict[str, Any]
    seeds: tuple[str, ...] = ()  # the reference seeds' numbers, in the order of finals
    path: Path | None = None

    def at(self, steps: int) -> tuple[np.ndarray, int] | None:
        """The reference scores a run that ended at ``steps`` is compared with, and their step (None: the run
        ended before the reference's first evaluation, where there is nothing to compare with)."""
        if steps >= self.n_timesteps:
            return self.finals, self.n_timesteps
        i = int(np.searchsorted(self.curve_steps, steps, side="right")) - 1
        if i < 0:
            return None
        return self.curves[:, i], int(self.curve_steps[i])


def reference_dir() -> Path:
    return Path(str(files("rlexp.data"))) / "reference"


def reference_path(name: str) -> Path:
    """Where the reference of tuned file ``name`` ships (a pair has reference results when it is there)."""
    return reference_dir() / f"{name}.json"


def load_reference(name: str, path: Path | None = None) -> Reference | None:
    """The reference of a tuned file (None: there is none); a file that cannot be read is a one-line error."""
    path = path or reference_path(name)
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
        if data.get("format") != FORMAT:
            raise ValueError(f"format {data.get('format')!r}, this rlexp reads {FORMAT}")
        seed_ids, seeds = tuple(data["seeds"]), list(data["seeds"].values())
        steps = seeds[0]["curve"]["steps"] if seeds else []
        curves = [s["curve"]["mean"] for s in seeds if s["curve"]["steps"] == steps]
        if len(curves) != len(seeds):
            raise ValueError("its seeds' curves have different steps")
        return Reference(
            name=name,
            env_id=data["env_id"],
            n_timesteps=int(data["n_timesteps"]),
            finals=np.array([float(s["final"]) for s in seeds]),
            curve_steps=np.array(steps, dtype=np.int64),
            curves=np.array(curves, dtype=np.float64).reshape(len(seeds), len(steps)),
            config=moved_targets(data["config"]),  # (a reference of an earlier release names old modules)
            seeds=seed_ids,
            path=path,
        )
    except (ValueError, KeyError, TypeError, IndexError) as err:
        raise ConfigError(f"reference {path}: unreadable ({err}); re-run benchmarks/reference.py") from None
