"""mkdocs hook: the picture of rlexp's layers on architecture.md, drawn at every build from the import-linter
contract in pyproject.toml (the rule ``lint-imports`` checks) and the modules in src/, as an inline SVG in
the theme's colours: it renders offline, with no script, and cannot drift from the code.

Also a script: ``python docs/hooks/architecture_figure.py out.svg`` writes the picture to a file.
"""

from __future__ import annotations

import html
import sys
import textwrap
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
MARK = "<!-- layers figure -->"
WIDTH, ROW, GAP, LEFT, RIGHT = 720, 50, 16, 22, 160  # pixels: the figure, a layer, between layers, margins
CHAR = 5.6  # the width of a character of the 11-pixel module lists, about
PLUGINS = "hydra_plugins"  # beside the stack: Hydra finds them by name; they hand over to rlexp.sweeper and cluster


def layers() -> list[list[str]]:
    """The layers of the contract, top first, each a list of its packages (or modules)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    (contract,) = (c for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "layers")
    return [[name.strip() for name in layer.split("|")] for layer in contract["layers"]]


def modules(package: str) -> list[str]:
    """The modules of ``package`` (none for a module)."""
    folder = ROOT / "src" / Path(*package.split("."))
    return sorted(p.stem for p in folder.glob("*.py") if p.stem != "__init__") if folder.is_dir() else []


def _box(x: float, y: float, w: float, h: float, title: str, lines: list[str], dashed: bool = False) -> list[str]:
    dash = ' stroke-dasharray="5 4"' if dashed else ""
    out = [
        f'<rect x="{x:.0f}" y="{y:.0f}" width="{w:.0f}" height="{h:.0f}" rx="6" class="box"{dash}/>',
        f'<text x="{x + 8:.0f}" y="{y + 17:.0f}" class="title">{html.escape(title)}</text>',
    ]
    out += [
        f'<text x="{x + 8:.0f}" y="{y + 31 + 12 * i:.0f}" class="mods">{html.escape(line)}</text>'
        for i, line in enumerate(lines)
    ]
    return out


def _wrapped(names: list[str], width: float) -> list[str]:
    return textwrap.wrap(", ".join(names), max(int((width - 16) / CHAR), 12)) or [""]


def svg() -> str:
    stack = layers()
    inner = WIDTH - LEFT - RIGHT
    rows: list[tuple[list[str], list[float], list[list[str]]]] = []
    for layer in stack:
        # side by side, each as wide as its name and its modules ask (a name never overflows its box)
        names = [p.removeprefix("rlexp.") for p in layer]
        least = [8 * len(name) + 18 for name in names]  # 13-pixel bold monospace
        text = [len(", ".join(modules(p))) + 1 for p in layer]
        spare = inner - 8 * (len(layer) - 1) - sum(least)
        widths = [w + spare * t / sum(text) for w, t in zip(least, text, strict=True)]
        texts = [_wrapped(modules(p), w) for p, w in zip(layer, widths, strict=True)]
        rows.append((layer, widths, texts))
    heights = [max(ROW, 24 + 12 * max(len(t) for t in texts) + 8) for _, _, texts in rows]
    height = sum(heights) + GAP * (len(rows) - 1) + 4
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" class="rlexp-layers" '
        f'role="img" aria-label="rlexp\'s layers, top to bottom: {html.escape("; ".join(" | ".join(layer) for layer in stack))}">',
        "<style>.box{fill:var(--md-default-bg-color,#fff);stroke:var(--md-default-fg-color--light,#888);"
        "stroke-width:1.2}.title{font:600 13px var(--md-code-font-family,monospace);"
        "fill:var(--md-default-fg-color,#222)}.mods,.num{font:11px var(--md-text-font-family,sans-serif);"
        "fill:var(--md-default-fg-color--light,#555)}.arrow{stroke:var(--md-default-fg-color--light,#888);"
        "stroke-width:1.4;fill:none}</style>",
        '<defs><marker id="rlexp-head" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
        'orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="var(--md-default-fg-color--light,#888)"/></marker></defs>',
    ]
    y = 2.0
    tops: dict[str, float] = {}
    for number, ((layer, widths, texts), h) in enumerate(zip(rows, heights, strict=True), start=1):
        parts.append(f'<text x="4" y="{y + h / 2 + 4:.0f}" class="num">{number}</text>')
        x = LEFT
        for package, w, lines in zip(layer, widths, texts, strict=True):
            parts += _box(x, y, w, h, package.removeprefix("rlexp."), lines)
            tops[package] = y
            x += w + 8
        if number < len(rows):  # "may import": each layer the ones below it
            mid = LEFT + inner / 2
            parts.append(
                f'<line x1="{mid:.0f}" y1="{y + h:.0f}" x2="{mid:.0f}" y2="{y + h + GAP - 1:.0f}" class="arrow" '
                'marker-end="url(#rlexp-head)"/>'
            )
        y += h + GAP
    plugins = sorted(p.name for p in (ROOT / "src" / PLUGINS).iterdir() if p.is_dir() and not p.name.startswith("_"))
    x, top = WIDTH - RIGHT + 16, tops.get("rlexp.run", 2.0)
    parts += _box(x, top, RIGHT - 18, 24 + 12 * len(plugins) + 8, PLUGINS, plugins, dashed=True)
    parts.append(
        f'<line x1="{x:.0f}" y1="{top + 20:.0f}" x2="{WIDTH - RIGHT + 2:.0f}" y2="{top + 20:.0f}" class="arrow" '
        'stroke-dasharray="5 4" marker-end="url(#rlexp-head)"/>'
    )
    parts.append("</svg>")
    return "".join(parts)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if MARK not in markdown:
        return markdown
    return markdown.replace(MARK, f'<div class="rlexp-layers-figure">{svg()}</div>')


def on_config(config: Any) -> Any:
    if str(ROOT / "pyproject.toml") not in config["watch"]:
        config["watch"].append(str(ROOT / "pyproject.toml"))
    return config


if __name__ == "__main__":
    Path(sys.argv[1]).write_text(svg())
