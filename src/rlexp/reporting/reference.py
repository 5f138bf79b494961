"""Did a run reproduce what its config should reach? Its final score placed within the reference results
that ship with rlexp (rlexp.data/reference/<tuned file>.json, written by benchmarks/reference.py from
real runs over seeds at the tuned budget).

A run is compared where it stands: at the reference's budget by its final evaluation against the
reference seeds' final evaluations; a run that stopped at other steps by its final evaluation against the
reference seeds' periodic evaluation at that step. Within means inside the range of the reference seeds
(a run below all of them happens by chance 1 time in N + 1 if it reproduces); the line gives the
reference's IQM with its 95% bootstrap interval and the run's rank among them, and names the config keys
in which the run differs from the reference's config (a user tuning by hand wants exactly this)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from omegaconf import DictConfig, OmegaConf

from rlexp.errors import ConfigError
from rlexp.stats.scores import confidence_interval, iqm

FORMAT = 1
MIN_SEEDS = 5  # fewer reference seeds say nothing about a distribution
# config keys that do not change what a run computes (threads, logging, where files go, what is drawn)
IGNORED = {"seed", "torch_threads", "curves", "device", "trained_agent", "search_space", "tuned_source"}
IGNORED_PREFIXES = ("logger.", "random_baseline.", "diagnostics.", "callbacks.progress_bar", "callbacks.checkpoint.")
SAME_RESULTS = {"auto", "dummy", "lean", "numpy", "subproc"}  # env.vec_env values with DummyVecEnv's numbers


@dataclass(frozen=True)
class Reference:
    name: str  # the tuned file (ppo_cartpole)
    env_id: str
    n_timesteps: int
    finals: np.ndarray  # one final evaluation per reference seed
    curve_steps: np.ndarray  # the periodic evaluations' steps, and each seed's mean at them (seeds x steps)
    curves: np.ndarray
    config: dict[str, Any]

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


def load_reference(name: str, path: Path | None = None) -> Reference | None:
    """The reference of a tuned file (None: there is none); a file that cannot be read is a one-line error."""
    path = path or reference_dir() / f"{name}.json"
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
        if data.get("format") != FORMAT:
            raise ValueError(f"format {data.get('format')!r}, this rlexp reads {FORMAT}")
        seeds = list(data["seeds"].values())
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
            config=data["config"],
        )
    except (ValueError, KeyError, TypeError, IndexError) as err:
        raise ConfigError(f"reference {path}: unreadable ({err}); re-run benchmarks/reference.py") from None


def _flat(tree: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(tree, dict):
        out: dict[str, Any] = {}
        for key, value in tree.items():
            out.update(_flat(value, f"{prefix}{key}."))
        return out
    return {prefix[:-1]: tree}


def _counted(key: str) -> bool:
    return key not in IGNORED and not key.startswith(IGNORED_PREFIXES)


def changed_keys(config: dict[str, Any], reference: dict[str, Any]) -> list[str]:
    """The keys whose values differ between a run's config and the reference's (those that change results)."""
    ours, theirs = _flat(config), _flat(reference)
    for flat in (ours, theirs):
        if flat.get("env.vec_env") in SAME_RESULTS:
            flat["env.vec_env"] = "auto"
    return sorted(k for k in ours.keys() | theirs.keys() if _counted(k) and ours.get(k) != theirs.get(k))


def verdict(reference: Reference, final: float, steps: int, changes: list[str]) -> dict[str, Any] | None:
    """Where ``final`` (a run's final evaluation after ``steps`` steps) falls among the reference's seeds
    (None for a run that ended before the reference's first evaluation)."""
    found = reference.at(steps)
    if found is None:
        return None
    scores, at = found
    n = scores.size
    if n < MIN_SEEDS:
        raise ConfigError(f"reference {reference.name}: {n} seeds, too few to compare with (at least {MIN_SEEDS})")
    below, above = int((scores < final).sum()), int((scores > final).sum())
    rank, rank_high = below + 1, n + 1 - above  # among the n + 1 scores, 1 the lowest; ties give a range
    if above == n:
        word, where = "below", f"lower than all {n} reference seeds"
    elif below == n:
        word, where = "above", f"higher than all {n} reference seeds"
    else:
        word, where = "within", "within the reference"
    ci = confidence_interval(scores, iqm) or [float(scores[0])] * 2
    budget = "" if at == reference.n_timesteps else f" at step {at:,} of its curve"
    line = (
        f"final {final:.2f}: {where} ({n} seeds{budget}, IQM {float(iqm(scores)):.1f}, 95% CI [{ci[0]:.1f}, "
        f"{ci[1]:.1f}]; this run ranks {rank if rank == rank_high else f'{rank}-{rank_high}'}/{n + 1})"
    )
    if changes:
        shown = ", ".join(changes[:4]) + (f" and {len(changes) - 4} more" if len(changes) > 4 else "")
        line += f"; this run changes {shown}"
    return {
        "verdict": word,
        "line": line,
        "reference": reference.name,
        "seeds": n,
        "compared_at": at,
        "iqm": float(iqm(scores)),
        "ci95_iqm": ci,
        "rank": rank,
        "rank_high": rank_high,
        "of": n + 1,
        "changes": changes,
    }


def run_verdict(cfg: DictConfig, final: float, steps: int) -> dict[str, Any] | None:
    """The verdict of a completed run whose tuned file has a reference on its env id (None otherwise); a
    reference that cannot be read gives the reason instead of a verdict (the run itself is complete)."""
    if not cfg.get("tuned_file"):
        return None
    try:
        reference = load_reference(cfg.tuned_file)
        if reference is None or reference.env_id != cfg.env.id or reference.finals.size < MIN_SEEDS:
            return None
        config = yaml.safe_load(OmegaConf.to_yaml(cfg, resolve=True))
        return verdict(reference, final, steps, changed_keys(config, reference.config))
    except ConfigError as err:
        return {"verdict": "unavailable", "line": f"no reference verdict: {err}"}
