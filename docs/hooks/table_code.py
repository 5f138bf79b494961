"""mkdocs hook: code in a table. Code without a space never wraps (``--stochastic``, ``<algo>-<env>``, a key),
and code with spaces (a console line) wraps between its words: the ``wrap`` class of docs/stylesheets/extra.css,
given here to each such code span of a table, so that no column is squeezed into breaking a name.

A pipe in code in a table is written ``\\|`` in the pages (GitHub's tables need it there); Python-Markdown keeps
the backslash inside code, so it is taken out here and the page shows ``png|pdf|svg`` as typed on the command
line."""

from __future__ import annotations

import re
from typing import Any

_CELL = re.compile(r"(?P<open><(?P<tag>t[dh])(?:\s[^>]*)?>)(?P<cell>.*?)</(?P=tag)>", re.S)
_CODE = re.compile(r"<code>([^<]*)</code>")
_SPACED = re.compile(r"<code>([^<]*\s[^<]*)</code>")


def _words(code: re.Match[str]) -> str:
    """The code's words, each unbreakable (a hyphen inside one is not a place to wrap)."""
    words = re.split(r"(\s+)", code.group(1))
    return (
        '<code class="wrap">' + "".join(w if w.isspace() or not w else f"<span>{w}</span>" for w in words) + "</code>"
    )


def _cell(cell: re.Match[str]) -> str:
    text = _CODE.sub(lambda code: "<code>" + code.group(1).replace("\\|", "|") + "</code>", cell.group("cell"))
    return cell.group("open") + _SPACED.sub(_words, text) + f"</{cell.group('tag')}>"


def on_page_content(html: str, page: Any, config: Any, files: Any) -> str:
    return _CELL.sub(_cell, html)
