"""mkdocs hook: in a table, code without a space never wraps (``--stochastic``, ``<algo>-<env>``, a key),
and code with spaces (a console line) wraps between its words: the ``wrap`` class of docs/stylesheets/extra.css,
given here to each such code span of a table cell, so that no column is squeezed into breaking a name."""

from __future__ import annotations

import re
from typing import Any

_CELL = re.compile(r"<td>(.*?)</td>", re.S)
_SPACED = re.compile(r"<code>([^<]*\s[^<]*)</code>")


def _words(code: re.Match[str]) -> str:
    """The code's words, each unbreakable (a hyphen inside one is not a place to wrap)."""
    words = re.split(r"(\s+)", code.group(1))
    return (
        '<code class="wrap">' + "".join(w if w.isspace() or not w else f"<span>{w}</span>" for w in words) + "</code>"
    )


def on_page_content(html: str, page: Any, config: Any, files: Any) -> str:
    return _CELL.sub(lambda cell: "<td>" + _SPACED.sub(_words, cell.group(1)) + "</td>", html)
