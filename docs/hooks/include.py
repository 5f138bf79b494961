"""mkdocs hook: ``<!-- include PATH -->`` on a line of its own becomes the file at PATH (from the repository
root) in a code block, so that a page shows a file of the code as it is (the export's run_policy.py)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
_MARK = re.compile(r"^<!-- include (\S+) -->$", re.M)
LANGUAGES = {".py": "python", ".yaml": "yaml", ".sh": "bash"}


def _block(mark: re.Match[str]) -> str:
    path = ROOT / mark.group(1)
    return f"```{LANGUAGES.get(path.suffix, 'text')}\n{path.read_text().rstrip()}\n```"


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    return _MARK.sub(_block, markdown)
