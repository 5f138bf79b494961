"""The env families as Markdown tables, rendered from their entries (``FAMILIES`` in
rlexp.config.env_families) and the tuned files of each: README's Environments table, and the docs' "Env
families" table of the tuned page (docs/hooks/reference.py). Neither is written by hand.

    python tools/families_table.py      # rewrites README's Environments table

tests/docs/test_readme.py checks that README holds this rendering, character for character.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from rlexp.config.env_families import FAMILIES, Family

README = Path(__file__).resolve().parents[1] / "README.md"
# README's table follows this line (an HTML comment: GitHub shows nothing of it)
MARK = "<!-- generated from FAMILIES (src/rlexp/config/env_families.py) and conf/tuned/: python tools/families_table.py -->"
README_COLUMNS = ("family", "extra", "tuned pairs", "envs", "notes")


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _envs(family: Family, presets: Sequence[str]) -> str:
    """How many envs the family's tuned files are for; a file for any id of the family (Atari's) as such."""
    envs = set(presets)
    if family.preset in envs and family.any_id:
        rest = len(envs) - 1
        return f"{rest} + {family.any_id}" if rest else family.any_id
    return str(len(envs))


def _presets_add(family: Family) -> str:
    adds = [f"`{target.rsplit('.', 1)[1]}`" for target in family.wrappers.values()]
    adds += [f"frame_stack={family.frame_stack}"] if family.frame_stack else []
    adds += [f"{key}={value}" for key, value in family.kwargs.items()]
    return ", ".join(adds) or "-"


# column -> its cell of a family, given the env presets of the family's tuned files (one per file)
CELLS = {
    "family": lambda f, presets: f.name,
    "extra": lambda f, presets: f"`{f.extra}`" if f.extra else "(core)",
    "ids registered by": lambda f, presets: f"`{f.module}`" if f.module else "Gymnasium",
    "any id gets": lambda f, presets: f"`env={f.preset}`" if f.preset else "-",
    "presets add": lambda f, presets: _presets_add(f),
    "tuned pairs": lambda f, presets: str(len(presets)),
    "envs": lambda f, presets: _envs(f, presets),
    "notes": lambda f, presets: _cell(f.summary) or "-",
}


def table(columns: Sequence[str], tuned: Mapping[str, Sequence[str]]) -> list[str]:
    """The lines of a table of every family, one row each in ``FAMILIES``' order. ``tuned``: family name ->
    the env presets of its tuned files (conf/tuned/<algo>_<env>.yaml: one ``env`` per file)."""
    lines = [f"| {' | '.join(columns)} |", "|" + "---|" * len(columns)]
    for family in FAMILIES:
        presets = tuned.get(family.name, ())
        lines.append(f"| {' | '.join(CELLS[c](family, presets) for c in columns)} |")
    return lines


def readme_table() -> str:
    """README's Environments table, from the families and the shipped tuned files."""
    from rlexp.config.tuned import tuned_pairs

    tuned: dict[str, list[str]] = {}
    for pair in tuned_pairs():
        tuned.setdefault(pair.family, []).append(pair.env)
    return "\n".join(table(README_COLUMNS, tuned))


def table_in(readme: str) -> str:
    """The table README holds after ``MARK`` (its consecutive ``|`` lines)."""
    if MARK not in readme:
        raise ValueError(f"README.md has no line {MARK!r} above its Environments table")
    lines = readme.split(MARK, 1)[1].lstrip("\n").splitlines()
    return "\n".join(lines[: next((i for i, line in enumerate(lines) if not line.startswith("|")), len(lines))])


def write_readme(path: Path = README) -> bool:
    """Rewrites README's table; True when it changed."""
    text = path.read_text()
    old = table_in(text)
    new = readme_table()
    if old == new:
        return False
    head, tail = text.split(MARK, 1)
    path.write_text(head + MARK + tail.replace(old, new, 1))
    return True


if __name__ == "__main__":
    print(f"{README.name}: the Environments table {'rewritten' if write_readme() else 'was up to date'}")
