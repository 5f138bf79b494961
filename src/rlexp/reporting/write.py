"""The report's files, all from its record's numbers: report.md, groups.csv, runs.csv, comparisons.csv,
table.tex (booktabs) and report.json itself, into the staging dir that rlexp.reporting.make_report swaps in whole."""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path
from typing import Any

from rlexp.stats.aggregates import IQM, PROBABILITY_OF_IMPROVEMENT, STATISTICS, Scores, reported
from rlexp.stats.report_record import ALL_ENVS, ALL_ENVS_NORMALIZED, Estimate, GroupRow, ReportRecord

READING = """\
**{iqm}** (interquartile mean) is the mean of the middle 50% of the runs' scores: unlike the mean it is not
dragged by one lucky or failed seed, and unlike the median it uses half the runs, not one or two, so it
needs fewer seeds to be precise. It is the headline number of rliable (Agarwal et al., NeurIPS 2021).

**[low, high]** is a {confidence:.0%} confidence interval from a stratified bootstrap: the runs are
resampled with replacement ({reps:,} times) and the statistic recomputed; the interval holds the middle
{confidence:.0%} of those values. It says how much the number could move with other seeds: overlapping
intervals mean the seeds do not settle which group is better.

**p-values** (Welch's t-test, and Mann-Whitney U, which does not assume normal scores) are the chance of a
difference at least this large if both groups were in truth the same. They are Holm-corrected for the
number of comparisons made, so "p < 0.05" keeps its meaning however many pairs are compared.
**{improvement}** is the probability that a run of A scores above a run of B; 0.5 is a tie. **Seeds for 80%
power** is how many seeds per group would detect the observed difference 8 times in 10 at p < 0.05 (one
comparison, uncorrected), if the spreads are as observed.
"""


def _num(x: Any) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "-"
    x = float(x)
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    if abs(x) >= 1:
        return f"{x:.2f}"
    return f"{x:.3f}" if abs(x) >= 0.01 or x == 0 else f"{x:.2g}"


def _p(x: float | None) -> str:
    return "-" if x is None else ("<0.001" if x < 0.001 else f"{x:.3f}")


def _estimate(e: Estimate | None) -> str:
    if e is None or e.value is None:
        return "-"
    if e.low is None:
        return _num(e.value)
    return f"{_num(e.value)} [{_num(e.low)}, {_num(e.high)}]"


def _row(r: GroupRow, keys: list[str]) -> list[str]:
    """A group's row: its name, its number of runs, then each statistic with its interval."""
    return [r.group, str(r.n), *(_estimate(r.estimates.get(k)) for k in keys)]


def _table(header: list[str], rows: list[list[str]]) -> str:
    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

    return "\n".join([line(header), "|" + "---|" * len(header), *(line(r) for r in rows)])


def markdown(report: ReportRecord, figures: dict[str, list[Path]], inputs: list[str]) -> str:
    s, c = report.settings, report.counts
    lines = [
        "# rlexp report",
        "",
        f"{c.used} runs used of {c.runs} found, in {c.groups} group{'s' * (c.groups != 1)} on "
        f"{len(c.envs)} env{'s' * (len(c.envs) != 1)}, from {', '.join(f'`{i}`' for i in inputs)}.",
        "",
        f"- score of a run: {s.metric_means} (`--metric {s.metric}`)",
        f"- intervals: {s.confidence:.0%}, {s.bootstrap}, {s.reps:,} repetitions, RNG seed {s.rng_seed}"
        f" (curve and profile bands: {s.band_reps:,})",
        f"- tests: {s.tests}; effect size: {s.effect_size}",
    ]
    if report.normalization:
        lines.append(
            "- normalized score = (score - random policy) / (target - random policy): "
            + ", ".join(
                f"{env} target {_num(v.target)}, random {_num(v.random)}" for env, v in report.normalization.items()
            )
        )
    left = [r for r in report.runs if not r.used]
    if left:
        lines += [
            "",
            f"## Left out ({len(left)})",
            "",
            _table(["run", "status", "why"], [[r.run_dir, r.status, str(r.left_out)] for r in left]),
        ]
    if report.notes:
        lines += ["", "## Notes", "", *(f"- {n}" for n in report.notes)]
    for env in c.envs:
        columns = {key: statistic.label for key, statistic in reported(Scores.RAW).items()}
        if env in report.normalization:
            columns |= {key: st.label_of(Scores.NORMALIZED) for key, st in reported(Scores.NORMALIZED).items()}
        table = [_row(r, list(columns)) for r in report.rows(env)]
        lines += ["", f"## {env}", "", _table(["group", "seeds", *columns.values()], table)]
    if report.aggregate:
        over_envs = reported(Scores.OVER_ENVS)  # (labelled as they are: the heading says normalized)
        lines += [
            "",
            f"## {ALL_ENVS} (normalized scores)",
            "",
            _table(
                ["group", "runs", *(st.label for st in over_envs.values())],
                [_row(r, list(over_envs)) for r in report.aggregate],
            ),
        ]
    if report.comparisons:
        lines += ["", "## Comparisons", "", _comparisons_table(report)]
    if report.reference_verdicts:
        lines += [
            "",
            "## Against the reference",
            "",
            f"Each group against the reference results of its tuned file ({s.reference_test}).",
            "",
            _verdicts_table(report),
        ]
    pngs = {name: p for name, paths in figures.items() for p in paths if p.suffix == ".png"}
    if pngs:
        lines += ["", "## Figures", ""]
        titles = {
            "sample_efficiency": "sample efficiency",
            "scores": "interval estimates",
            "performance_profile": "performance profiles",
        }
        lines += [f"![{titles.get(name, name)}]({p.name})\n" for name, p in pngs.items()]
    reading = READING.format(
        iqm=IQM.label, confidence=s.confidence, reps=s.reps, improvement=PROBABILITY_OF_IMPROVEMENT.label
    )
    lines += ["", "## How to read this", "", reading]
    return "\n".join(lines)


def _comparisons_table(report: ReportRecord) -> str:
    header = ["A", "B", "env", PROBABILITY_OF_IMPROVEMENT.label, "Welch p (Holm)", "Mann-Whitney p (Holm)", "Hedges' g",
              "seeds for 80% power"]  # fmt: skip
    rows = [
        [
            r.a,
            r.b,
            r.env,
            _estimate(r.improvement),
            _p(r.welch_p_holm),
            _p(r.mann_whitney_p_holm),
            _num(r.hedges_g),
            "-" if r.over_envs else str(r.seeds_for_power or "-"),
        ]
        for r in report.comparisons
    ]
    return _table(header, rows)


def _verdicts_table(report: ReportRecord) -> str:
    header = ["group", "env", "reference", "seeds", IQM.label, f"reference {IQM.label}", "P(run > reference seed)",
              "Mann-Whitney p (Holm)", "verdict"]  # fmt: skip
    rows = [
        [
            r.group,
            r.env,
            r.reference,
            f"{r.n} vs {r.n_reference}",
            _num(r.iqm),
            _num(r.reference_iqm),
            _num(r.p_run_beats_reference),
            _p(r.mann_whitney_p_holm),
            f"**{r.verdict}**",
        ]
        for r in report.reference_verdicts
    ]
    return _table(header, rows)


def _csv(header: list[str], rows: list[list[Any]]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows([["" if v is None else v for v in row] for row in rows])
    return buffer.getvalue()


# groups.csv's statistics: those of an env's own scores, then those of normalized scores
ESTIMATES = (
    *reported(Scores.RAW),
    *(s.key(Scores.NORMALIZED) for s in STATISTICS if s.on & {Scores.NORMALIZED, Scores.OVER_ENVS}),
)


def groups_csv(report: ReportRecord) -> str:
    header = ["group", "env", "n", "seeds"]
    for name in ESTIMATES:
        header += [name, f"{name}_low", f"{name}_high"]
    rows = []
    for r in (*report.groups, *report.aggregate):
        row = [r.group, r.env, r.n, " ".join(str(x) for x in r.seeds or ())]
        for name in ESTIMATES:  # over all envs: the normalized statistics in the normalized_* columns only
            e = r.estimates.get(name)
            row += [None, None, None] if e is None else [e.value, e.low, e.high]
        rows.append(row)
    return _csv(header, rows)


def runs_csv(report: ReportRecord) -> str:
    keys = sorted({k for r in report.runs for k in r.config})
    header = [
        "run_dir",
        "status",
        "used",
        "left_out",
        "group",
        "env",
        "algo",
        "seed",
        "score",
        "final_eval",
        "best_eval",
        "steps_done",
    ]
    rows = [[getattr(r, h) for h in header] + [r.config.get(k) for k in keys] for r in report.runs]
    return _csv(header + keys, rows)


def comparisons_csv(report: ReportRecord) -> str:
    """One row per comparison row of report.json; P(A > B) and its interval in the columns it declares."""
    improvement = PROBABILITY_OF_IMPROVEMENT
    header = [
        "a", "b", "env", "n_a", "n_b", "difference_of_means", *improvement.columns(),
        "welch_p", "welch_p_holm", "mann_whitney_p", "mann_whitney_p_holm", "hedges_g", "seeds_for_power",
    ]  # fmt: skip
    rows = []
    for r in report.comparisons:
        e = r.improvement
        flat = {**r.to_json(), **dict(zip(improvement.columns(), (e.value, e.low, e.high), strict=True))}
        rows.append([flat.get(h) for h in header])
    return _csv(header, rows)


_TEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}  # fmt: skip


def _tex(text: str) -> str:
    return "".join(_TEX.get(ch, ch) for ch in text)


def table_tex(report: ReportRecord) -> str:
    """Groups x envs, IQM with its CI: a booktabs table to \\input into a paper."""
    envs = [*report.counts.envs, *([ALL_ENVS_NORMALIZED] if report.aggregate else [])]
    cells = {(r.group, r.env): r.estimate(IQM, Scores.RAW) for r in report.groups}
    cells.update({(r.group, ALL_ENVS_NORMALIZED): r.estimate(IQM, Scores.OVER_ENVS) for r in report.aggregate})
    s = report.settings

    def cell(e: Estimate | None) -> str:
        if e is None or e.value is None:
            return "--"
        if e.low is None:
            return f"{_num(e.value)}"
        return f"{_num(e.value)} {{\\scriptsize [{_num(e.low)}, {_num(e.high)}]}}"

    lines = [
        f"% rlexp report: {IQM.label} over seeds with "
        f"{s.confidence:.0%} stratified bootstrap CIs ({s.reps} reps, seed {s.rng_seed}); needs \\usepackage{{booktabs}}",
        "\\begin{tabular}{l" + "r" * len(envs) + "}",
        "\\toprule",
        "Group & " + " & ".join(_tex(e) for e in envs) + " \\\\",
        "\\midrule",
        *(_tex(g) + " & " + " & ".join(cell(cells.get((g, e))) for e in envs) + " \\\\" for g in report.groups_order),
        "\\bottomrule",
        "\\end{tabular}",
        "",
    ]
    return "\n".join(lines)


def write_all(report: ReportRecord, out: Path, figures: dict[str, list[Path]], inputs: list[str]) -> None:
    (out / "report.json").write_text(report.to_json())
    (out / "groups.csv").write_text(groups_csv(report))
    (out / "runs.csv").write_text(runs_csv(report))
    (out / "comparisons.csv").write_text(comparisons_csv(report))
    (out / "table.tex").write_text(table_tex(report))
    (out / "report.md").write_text(markdown(report, figures, inputs))
