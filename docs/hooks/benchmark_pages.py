"""mkdocs hook: the reference pages made at every build from a benchmark's committed results, by the harness
that writes them (its ``page``), so that no table is typed: reference/zoo-parity.md from
benchmarks/zoo_parity.json, reference/zoo-agents.md from benchmarks/zoo_agents.json."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[2]
# page -> (the harness in benchmarks/, its title, the nox session that writes its results)
PAGES = {
    "reference/zoo-parity.md": ("zoo_parity", "Parity with RL Zoo", "nox -s zoo-parity"),
    "reference/zoo-agents.md": ("zoo_agents", "RL Zoo's published agents", "nox -s zoo-agents -- CHECKOUT"),
}


def _results(harness: str) -> Path:
    return ROOT / "benchmarks" / f"{harness}.json"


def on_config(config: Any) -> Any:
    for harness, _, _ in PAGES.values():
        if str(_results(harness)) not in config["watch"]:
            config["watch"].append(str(_results(harness)))
    return config


def on_files(files: Files, config: Any) -> Files:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        for page, (harness, title, session) in PAGES.items():
            results = _results(harness)
            if results.is_file():
                content = importlib.import_module(harness).page(json.loads(results.read_text()))
            else:  # (a checkout that never ran the harness)
                content = f"# {title}\n\nNot measured in this checkout: `{session}` writes the table.\n"
            files.append(File.generated(config, page, content=content))
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    return files
