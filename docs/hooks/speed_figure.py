"""mkdocs hook: img/speed_vs_zoo.png, drawn at every build from the whole-run table of benchmarks.md (the
table after ``<!-- speed table -->``), so that the figure always shows the numbers the page states.

Also a script: ``python docs/hooks/speed_figure.py out.png`` draws it to a file.
"""

from __future__ import annotations

import io
import re
import sys
import textwrap
from pathlib import Path
from typing import Any

PAGE = Path(__file__).resolve().parents[1] / "benchmarks.md"
MARK = "<!-- speed table -->"
FIGURE = "img/speed_vs_zoo.png"
# bar label -> the table's column of its ratio to the zoo, or (for the plain script, which has none) its seconds
RUNNERS = {"rlexp": "rlexp / zoo", "plain SB3 script": "plain SB3"}


def speed_table(text: str) -> list[dict[str, str]]:
    """The rows of the Markdown table that follows MARK, as dicts by column name."""
    lines = text.split(MARK, 1)[1].strip().splitlines()
    rows = []
    for line in lines:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    header, body = rows[0], rows[2:]
    return [dict(zip(header, row, strict=True)) for row in body]


def _number(cell: str) -> float | None:
    match = re.fullmatch(r"([\d.]+)( s)?", cell)
    return float(match.group(1)) if match else None


def _ratio(row: dict[str, str], column: str, zoo_column: str) -> float:
    """The row's ratio to the zoo: the table's own where it has one, else seconds over the zoo's."""
    value = _number(row[column])
    if value is None:
        return float("nan")
    return value if not row[column].endswith(" s") else value / (_number(row[zoo_column]) or float("nan"))


def _label(case: str) -> str:
    """A table cell as a tick label: its Markdown (code spans) as plain text, wrapped."""
    return textwrap.fill(case.replace("`", ""), 34)


def draw(text: str) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = speed_table(text)
    zoo_column = next(c for c in rows[0] if c.startswith("rl-zoo3"))
    fig, ax = plt.subplots(figsize=(9, 1.6 + 0.75 * len(rows)))
    height = 0.8 / len(RUNNERS)
    for i, (label, column) in enumerate(RUNNERS.items()):
        ratios = [_ratio(row, column, zoo_column) for row in rows]
        ys = [k + (i - (len(RUNNERS) - 1) / 2) * height for k in range(len(rows))]
        bars = ax.barh(ys, ratios, height=height * 0.95, label=label)
        ax.bar_label(bars, labels=[f"{r:.2f}" if r == r else "" for r in ratios], padding=3, fontsize=8)
    ax.axvline(1.0, color="0.3", linestyle="--", linewidth=1, label=f"{zoo_column} (= 1)")
    ax.set_yticks(range(len(rows)), [_label(row["case"]) for row in rows], fontsize=9)
    ax.invert_yaxis()
    ax.set_xlabel("whole-process wall time relative to RL Zoo's train.py (lower is faster)", fontsize=9)
    ax.set_xlim(0, max(1.6, max(bar.get_width() for bar in ax.patches if bar.get_width() == bar.get_width()) + 0.2))
    # below the axes: a legend inside would cover a bar
    ax.legend(fontsize=9, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=len(RUNNERS) + 1, frameon=False)
    ax.grid(axis="x", alpha=0.3)
    out = io.BytesIO()
    fig.savefig(out, format="png", dpi=110, bbox_inches="tight")  # (nothing of a label or the legend cut)
    plt.close(fig)
    return out.getvalue()


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File

    files.append(File.generated(config, FIGURE, content=draw(PAGE.read_text())))
    return files


if __name__ == "__main__":
    Path(sys.argv[1]).write_bytes(draw(PAGE.read_text()))
