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

from typing import Any

from rlexp.errors import ConfigError
from rlexp.references.files import MIN_SEEDS, Reference, load_reference
from rlexp.references.zoo_benchmark import run_published
from rlexp.rundir.record import ABSENT, _Absent
from rlexp.stats.aggregates import iqm
from rlexp.stats.scores import confidence_interval

# config keys that do not change what a run computes (threads, logging, where files go, what is drawn)
IGNORED = {
    "seed", "torch_threads", "curves", "device", "trained_agent", "search_space", "tuned_source",
    "env.aliases", "env.replaces",  # (the ids a preset answers to: not what it builds)
}  # fmt: skip
IGNORED_PREFIXES = ("logger.", "random_baseline.", "diagnostics.", "callbacks.progress_bar", "callbacks.checkpoint.")
SAME_RESULTS = {"auto", "dummy", "lean", "numpy", "subproc"}  # env.vec_env values with DummyVecEnv's numbers


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


def run_verdict(
    config: dict[str, Any], tuned_file: str | None, env_id: str, final: float, steps: int
) -> dict[str, Any] | None:
    """The verdict of a completed run whose tuned file (``tuned_file``) has a reference on its env id
    (``env_id``; None otherwise); a reference that cannot be read gives the reason instead of a verdict (the
    run itself is complete). ``config``: the run's composed config as plain data (config.yaml's values:
    rlexp.config.plain.plain_dict with enums by name), whole because the verdict names every key where it
    differs from the reference's config."""
    if not tuned_file:
        return None
    try:
        reference = load_reference(tuned_file)
        if reference is None or reference.env_id != env_id or reference.finals.size < MIN_SEEDS:
            return None
        return verdict(reference, final, steps, changed_keys(config, reference.config))
    except ConfigError as err:
        return {"verdict": "unavailable", "line": f"no reference verdict: {err}"}


def run_standing(
    config: dict[str, Any], *, algo: str | None, tuned_file: str | None, env_id: str, final: float, steps: int
) -> tuple[dict[str, Any] | _Absent, dict[str, Any] | _Absent]:
    """What a completed run's record says of its score: its verdict (summary.json's ``reference``) and, for a
    tuned pair without reference results, RL Zoo's published score beside it (``zoo_published``).
    ``config``: the composed config as plain data (run_verdict); ``algo``: the algo choice; ``tuned_file``,
    ``env_id``: the config's ``tuned_file`` and ``env.id``."""
    published = run_published(algo, env_id, tuned_file, final, steps)
    return run_verdict(config, tuned_file, env_id, final, steps) or ABSENT, published or ABSENT
