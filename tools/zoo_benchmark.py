"""RL Baselines3 Zoo's benchmark.md (the score of its one trained agent per algo and env) as
src/rlexp/data/zoo_benchmark.csv, which rlexp.references.zoo_benchmark reads: the numbers as the table
writes them, the algo in rlexp's name (rlexp.config.algorithms, by its zoo name), the zoo's commit in the first line.

    python tools/zoo_benchmark.py ../rl-baselines3-zoo/benchmark.md      # (nox -s zoo-benchmark -- PATH)
    python tools/zoo_benchmark.py benchmark.md --commit 22e3ff24...      # a copy outside a zoo checkout
"""

from __future__ import annotations

import argparse
import csv
import io
import subprocess
import sys
from pathlib import Path

from rlexp.config.algorithms import by_zoo_name
from rlexp.references.zoo_benchmark import COLUMNS, CSV_NAME, GENERATED, SOURCE_PREFIX, source_text

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "src" / "rlexp" / "data" / CSV_NAME


def parse(text: str) -> tuple[list[dict[str, str]], list[str]]:
    """The table's rows, in its order, with rlexp's algo names; and the algos rlexp does not train (left
    out). A table of other columns, a row that is not numbers where numbers go, or a pair twice is a
    ValueError naming the line."""
    lines = [(n, line.strip()) for n, line in enumerate(text.splitlines(), 1) if line.strip().startswith("|")]
    if not lines:
        raise ValueError("no table")
    header = [cell.strip() for cell in lines[0][1].strip("|").split("|")]
    if tuple(header) != COLUMNS:
        raise ValueError(f"line {lines[0][0]}: columns {header}, not {list(COLUMNS)}")
    rows: list[dict[str, str]] = []
    skipped: list[str] = []
    seen: set[tuple[str, str]] = set()
    for n, line in lines[1:]:
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if all(set(cell) <= set("-: ") for cell in cells):  # the separator row
            continue
        if len(cells) != len(COLUMNS):
            raise ValueError(f"line {n}: {len(cells)} cells, not {len(COLUMNS)}")
        row = dict(zip(COLUMNS, cells, strict=True))
        try:
            float(row["mean_reward"]), float(row["std_reward"]), int(row["eval_timesteps"]), int(row["eval_episodes"])
        except ValueError:
            raise ValueError(f"line {n}: not a number where one goes: {line}") from None
        algorithm = by_zoo_name(row["algo"])
        if algorithm is None:
            skipped.append(row["algo"])
            continue
        row["algo"] = algorithm.name
        if (row["algo"], row["env_id"]) in seen:
            raise ValueError(f"line {n}: {row['algo']} on {row['env_id']} a second time")
        seen.add((row["algo"], row["env_id"]))
        rows.append(row)
    return rows, sorted(set(skipped))


def csv_text(rows: list[dict[str, str]], commit: str) -> str:
    """The csv as it ships: the source line, the columns, the rows."""
    out = io.StringIO()
    out.write(f"{SOURCE_PREFIX}{source_text(commit)}{GENERATED}\n")
    writer = csv.DictWriter(out, COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


def _checkout_commit(path: Path) -> str:
    """The commit of the zoo checkout whose benchmark.md ``path`` is (unchanged since), else SystemExit."""
    git = ["git", "-C", str(path.parent)]
    top = subprocess.run([*git, "rev-parse", "--show-toplevel"], capture_output=True, text=True)
    root = Path(top.stdout.strip()) if top.returncode == 0 else None
    if root is None or path != root / "benchmark.md" or not (root / "rl_zoo3").is_dir():
        raise SystemExit(f"zoo_benchmark: {path} is not the benchmark.md of a git checkout of the zoo: give --commit")
    head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True)
    changed = subprocess.run([*git, "status", "--porcelain", "--", path.name], capture_output=True, text=True)
    if changed.stdout.strip():
        raise SystemExit(f"zoo_benchmark: {path} has changes not in commit {head.stdout.strip()}")
    return head.stdout.strip()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tools/zoo_benchmark.py", description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("benchmark", nargs="?", type=Path, help="RL Zoo's benchmark.md")
    parser.add_argument("--commit", help="the zoo's commit the file is from (default: its checkout's HEAD)")
    parser.add_argument("--out", type=Path, default=OUT, help=f"where to write ({OUT.relative_to(REPO)})")
    args = parser.parse_args(argv)
    if args.benchmark is None:
        parser.print_usage()
        return 2
    try:
        rows, skipped = parse(args.benchmark.read_text())
    except (OSError, ValueError) as err:
        raise SystemExit(f"zoo_benchmark: {args.benchmark}: {err}") from None
    commit = args.commit or _checkout_commit(args.benchmark.resolve())
    args.out.write_text(csv_text(rows, commit))
    left = f"; left out the algos rlexp does not train: {', '.join(skipped)}" if skipped else ""
    print(f"zoo_benchmark: {len(rows)} rows of {commit} written to {args.out}{left}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
