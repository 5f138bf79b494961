"""A report's numbers, report.json as one typed record (as rlexp.rundir.record.RunRecord is summary.json):
rlexp.reporting.compute builds it, and report.md, the CSVs, the LaTeX table, the figures, the console's
lines and the Python API read its attributes, so that no key is spelled one way by the writer and another
by a reader. A statistic's key is its declaration's (rlexp.stats.aggregates), never typed here.

``to_json`` writes the keys in the order of earlier releases, NaN as null; ``from_json`` reads report.json
of this release and of earlier ones (which lack ``reference_verdicts``, ``zoo_published`` or ``uncurved``).
It sits with the statistics, below the figures that draw it and the reporting that computes it."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rlexp.stats.aggregates import IQM, PROBABILITY_OF_IMPROVEMENT, STATISTICS, Scores, Statistic

ALL_ENVS = "all envs"  # the env of a row over every env
ALL_ENVS_NORMALIZED = f"{ALL_ENVS} (normalized)"  # its panel and column: normalized scores over every env


@dataclass(frozen=True)
class Estimate:
    """A point estimate with its bootstrap interval (low and high None: one run, no interval)."""

    value: float | None
    low: float | None
    high: float | None

    def to_json(self) -> dict[str, Any]:
        return {"value": self.value, "low": self.low, "high": self.high}

    @classmethod
    def from_json(cls, e: Mapping[str, Any]) -> Estimate:
        return cls(e.get("value"), e.get("low"), e.get("high"))


# every key a group's row may hold a statistic under, of any scores
_STATISTIC_KEYS = {s.key(scores) for s in STATISTICS for scores in s.on}


@dataclass(frozen=True)
class GroupRow:
    """One group's statistics on one env (``seeds``: its runs' seeds), or over every env (``env`` ALL_ENVS,
    normalized scores, ``seeds`` None). ``estimates``: by their keys, in report.json's order."""

    group: str
    env: str
    n: int
    seeds: tuple[Any, ...] | None
    estimates: Mapping[str, Estimate]

    def estimate(self, statistic: Statistic, scores: Scores) -> Estimate | None:
        """``statistic`` of ``scores`` (None where the row has none: no target, no normalized scores)."""
        return self.estimates.get(statistic.key(scores))

    def to_json(self) -> dict[str, Any]:
        seeds = {} if self.seeds is None else {"seeds": list(self.seeds)}
        return {
            "group": self.group,
            "env": self.env,
            **seeds,
            "n": self.n,
            **{k: e.to_json() for k, e in self.estimates.items()},
        }

    @classmethod
    def from_json(cls, r: Mapping[str, Any]) -> GroupRow:
        seeds = r.get("seeds")
        estimates = {k: Estimate.from_json(v) for k, v in r.items() if k in _STATISTIC_KEYS and v is not None}
        return cls(r["group"], r["env"], int(r["n"]), None if seeds is None else tuple(seeds), estimates)


@dataclass(frozen=True)
class Comparison:
    """Group A against group B on one env, or over the envs both ran on (``envs``; then P(A > B) alone)."""

    a: str
    b: str
    env: str
    improvement: Estimate  # PROBABILITY_OF_IMPROVEMENT
    envs: tuple[str, ...] | None = None
    n_a: int | None = None
    n_b: int | None = None
    difference_of_means: float | None = None
    welch_p: float | None = None
    mann_whitney_p: float | None = None
    hedges_g: float | None = None
    seeds_for_power: int | str | None = None
    welch_p_holm: float | None = None
    mann_whitney_p_holm: float | None = None

    @property
    def over_envs(self) -> bool:
        return self.envs is not None

    def to_json(self) -> dict[str, Any]:
        improvement = {PROBABILITY_OF_IMPROVEMENT.name: self.improvement.to_json()}
        if self.envs is not None:
            return {"a": self.a, "b": self.b, "env": self.env, "envs": list(self.envs), **improvement}
        return {
            "a": self.a,
            "b": self.b,
            "env": self.env,
            "n_a": self.n_a,
            "n_b": self.n_b,
            "difference_of_means": self.difference_of_means,
            **improvement,
            "welch_p": self.welch_p,
            "mann_whitney_p": self.mann_whitney_p,
            "hedges_g": self.hedges_g,
            "seeds_for_power": self.seeds_for_power,
            "welch_p_holm": self.welch_p_holm,
            "mann_whitney_p_holm": self.mann_whitney_p_holm,
        }

    @classmethod
    def from_json(cls, r: Mapping[str, Any]) -> Comparison:
        envs = r.get("envs")
        return cls(
            r["a"],
            r["b"],
            r["env"],
            Estimate.from_json(r[PROBABILITY_OF_IMPROVEMENT.name]),
            None if envs is None else tuple(envs),
            **{k: r.get(k) for k in _COMPARISON_NUMBERS},
        )


_COMPARISON_NUMBERS = (
    "n_a", "n_b", "difference_of_means", "welch_p", "mann_whitney_p", "hedges_g", "seeds_for_power",
    "welch_p_holm", "mann_whitney_p_holm",
)  # fmt: skip


@dataclass(frozen=True)
class ReferenceVerdict:
    """A group against the reference results of its tuned file: reproduced, below, above or undecided."""

    group: str
    env: str
    reference: str
    n: int
    n_reference: int
    iqm: float
    reference_iqm: float
    p_run_beats_reference: float
    mann_whitney_p: float | None
    mann_whitney_p_holm: float | None
    verdict: str

    def to_json(self) -> dict[str, Any]:
        return {
            "group": self.group,
            "env": self.env,
            "reference": self.reference,
            "n": self.n,
            "n_reference": self.n_reference,
            IQM.name: self.iqm,
            f"reference_{IQM.name}": self.reference_iqm,
            "p_run_beats_reference": self.p_run_beats_reference,
            "mann_whitney_p": self.mann_whitney_p,
            "mann_whitney_p_holm": self.mann_whitney_p_holm,
            "verdict": self.verdict,
        }

    @classmethod
    def from_json(cls, r: Mapping[str, Any]) -> ReferenceVerdict:
        return cls(
            r["group"], r["env"], r["reference"], r["n"], r["n_reference"], r[IQM.name], r[f"reference_{IQM.name}"],
            r["p_run_beats_reference"], r.get("mann_whitney_p"), r.get("mann_whitney_p_holm"), r["verdict"],
        )  # fmt: skip


@dataclass(frozen=True)
class Band:
    """A group's curve over the steps, or its performance profile over the taus: the point at each, and
    its band (None where one run gives none)."""

    point: Sequence[float | None]
    low: Sequence[float | None]
    high: Sequence[float | None]
    runs: int | None = None  # (a curve: the runs it is drawn from)


@dataclass(frozen=True)
class Curve:
    """One env's sample-efficiency curves: each group's IQM over its runs at common steps."""

    steps: Sequence[float]
    interpolated: bool
    groups: Mapping[str, Band]

    def to_json(self) -> dict[str, Any]:
        return {
            "steps": list(self.steps),
            "interpolated": self.interpolated,
            "groups": {
                g: {"runs": b.runs, IQM.name: list(b.point), "low": list(b.low), "high": list(b.high)}
                for g, b in self.groups.items()
            },
        }

    @classmethod
    def from_json(cls, c: Mapping[str, Any]) -> Curve:
        groups = {g: Band(b[IQM.name], b["low"], b["high"], b.get("runs")) for g, b in c["groups"].items()}
        return cls(c["steps"], bool(c["interpolated"]), groups)


@dataclass(frozen=True)
class Profile:
    """One panel of performance profiles: each group's fraction of runs above each tau."""

    taus: Sequence[float]
    groups: Mapping[str, Band]

    def to_json(self) -> dict[str, Any]:
        return {
            "taus": list(self.taus),
            "groups": {
                g: {"fraction": list(b.point), "low": list(b.low), "high": list(b.high)} for g, b in self.groups.items()
            },
        }

    @classmethod
    def from_json(cls, p: Mapping[str, Any]) -> Profile:
        return cls(p["taus"], {g: Band(b["fraction"], b["low"], b["high"]) for g, b in p["groups"].items()})


@dataclass(frozen=True)
class RunRow:
    """One run found: its group and score, or why it was left out, and the config keys that differ."""

    run_dir: str
    group: str | None
    env: str
    algo: str | None
    seed: Any
    status: str
    score: float | None
    used: bool
    left_out: str | None
    final_eval: float | None
    best_eval: float | None
    steps_done: int | None
    config: Mapping[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in _RUN_FIELDS}

    @classmethod
    def from_json(cls, r: Mapping[str, Any]) -> RunRow:
        fields: dict[str, Any] = {name: r.get(name) for name in _RUN_FIELDS}  # (None where an older record lacks it)
        return cls(**fields)


_RUN_FIELDS = tuple(RunRow.__dataclass_fields__)


@dataclass(frozen=True)
class ReportSettings:
    """Everything that changed a number of the report, as it was."""

    metric: str
    metric_means: str
    bootstrap: str
    method: str
    reps: int
    confidence: float
    rng_seed: int
    band_reps: int
    targets: Mapping[str, float]
    baseline: str | None
    tests: str
    power: Mapping[str, Any]
    effect_size: str
    reference_test: str | None = None  # (--reference: how each group was compared with its reference)
    references: tuple[tuple[str, str, str], ...] = ()  # (group, env, reference group)

    @property
    def reference_groups(self) -> set[str]:
        return {reference for _, _, reference in self.references}

    def to_json(self) -> dict[str, Any]:
        out = {name: getattr(self, name) for name in _SETTINGS_FIELDS[:-2]}
        if self.references:
            out["reference_test"] = self.reference_test
            out["references"] = [{"group": g, "env": e, "reference": r} for g, e, r in self.references]
        return out

    @classmethod
    def from_json(cls, s: Mapping[str, Any]) -> ReportSettings:
        given = {name: s[name] for name in _SETTINGS_FIELDS[:-1] if name in s}
        references = tuple((r["group"], r["env"], r["reference"]) for r in s.get("references", []))
        return cls(**{**_SETTINGS_DEFAULTS, **given, "references": references})


_SETTINGS_FIELDS = tuple(ReportSettings.__dataclass_fields__)
# what report.json of an earlier release may lack
_SETTINGS_DEFAULTS: dict[str, Any] = {"method": "percentile", "band_reps": 0, "power": {}, "effect_size": ""}


@dataclass(frozen=True)
class Counts:
    """How many runs were found, used and left out, in how many groups, on which envs (sorted)."""

    runs: int
    used: int
    left_out: int
    groups: int
    envs: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "runs": self.runs,
            "used": self.used,
            "left_out": self.left_out,
            "groups": self.groups,
            "envs": list(self.envs),
        }


@dataclass(frozen=True)
class Normalization:
    """An env's target and random-policy return: normalized score = (score - random) / (target - random)."""

    target: float
    random: float


@dataclass(frozen=True)
class ReportRecord:
    """report.json, field by field in the order it is written."""

    settings: ReportSettings
    counts: Counts
    groups_order: tuple[str, ...]
    normalization: Mapping[str, Normalization]
    notes: tuple[str, ...]
    groups: tuple[GroupRow, ...]
    aggregate: tuple[GroupRow, ...]
    comparisons: tuple[Comparison, ...]
    reference_verdicts: tuple[ReferenceVerdict, ...] = ()
    # RL Zoo's published score beside a group without a reference (rlexp.references' record, with its line)
    zoo_published: tuple[Mapping[str, Any], ...] = ()
    curves: Mapping[str, Curve] = field(default_factory=dict)
    uncurved: Mapping[str, str] = field(default_factory=dict)  # env -> why it has no curve
    profiles: Mapping[str, Profile] = field(default_factory=dict)
    runs: tuple[RunRow, ...] = ()

    def rows(self, env: str) -> list[GroupRow]:
        """The rows of ``env``'s table (ALL_ENVS: the aggregates over every env)."""
        return list(self.aggregate) if env == ALL_ENVS else [r for r in self.groups if r.env == env]

    def tables(self) -> dict[str, list[dict[str, Any]]]:
        """Its tables as report.json's rows (the Python API's DataFrames)."""
        return {
            "groups": [r.to_json() for r in self.groups],
            "aggregate": [r.to_json() for r in self.aggregate],
            "comparisons": [r.to_json() for r in self.comparisons],
            "reference_verdicts": [r.to_json() for r in self.reference_verdicts],
            "zoo_published": [dict(r) for r in self.zoo_published],
            "runs": [r.to_json() for r in self.runs],
        }

    def to_dict(self) -> dict[str, Any]:
        tables = self.tables()
        return {
            "settings": self.settings.to_json(),
            "counts": self.counts.to_json(),
            "groups_order": list(self.groups_order),
            "normalization": {env: {"target": n.target, "random": n.random} for env, n in self.normalization.items()},
            "notes": list(self.notes),
            "groups": tables["groups"],
            "aggregate": tables["aggregate"],
            "comparisons": tables["comparisons"],
            "reference_verdicts": tables["reference_verdicts"],
            "zoo_published": tables["zoo_published"],
            "curves": {env: c.to_json() for env, c in self.curves.items()},
            "uncurved": dict(self.uncurved),
            "profiles": {name: p.to_json() for name, p in self.profiles.items()},
            "runs": tables["runs"],
        }

    def to_json(self) -> str:
        """report.json's text: NaN and inf as null, so that every JSON reader takes it."""
        return json.dumps(_finite(self.to_dict()), indent=1, default=str, allow_nan=False) + "\n"

    @classmethod
    def from_json(cls, text: str) -> ReportRecord:
        """A report.json of this release or an earlier one."""
        r = json.loads(text)
        c = r["counts"]
        return cls(
            settings=ReportSettings.from_json(r["settings"]),
            counts=Counts(c["runs"], c["used"], c["left_out"], c["groups"], tuple(c["envs"])),
            groups_order=tuple(r["groups_order"]),
            normalization={env: Normalization(n["target"], n["random"]) for env, n in r["normalization"].items()},
            notes=tuple(r["notes"]),
            groups=tuple(GroupRow.from_json(x) for x in r["groups"]),
            aggregate=tuple(GroupRow.from_json(x) for x in r["aggregate"]),
            comparisons=tuple(Comparison.from_json(x) for x in r["comparisons"]),
            reference_verdicts=tuple(ReferenceVerdict.from_json(x) for x in r.get("reference_verdicts", [])),
            zoo_published=tuple(r.get("zoo_published", [])),
            curves={env: Curve.from_json(x) for env, x in r["curves"].items()},
            uncurved=r.get("uncurved", {}),
            profiles={name: Profile.from_json(x) for name, x in r["profiles"].items()},
            runs=tuple(RunRow.from_json(x) for x in r["runs"]),
        )


def _finite(value: Any) -> Any:
    """NaN and inf as null: report.json must be JSON that every reader takes."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value
