"""mkdocs hook: reference/zoo-parity.md, made at every build from benchmarks/zoo_parity.json by the harness
that writes it (benchmarks/zoo_parity.py's ``page``), so that the table is never typed."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "zoo_parity.json"


def on_config(config: Any) -> Any:
    if str(RESULTS) not in config["watch"]:
        config["watch"].append(str(RESULTS))
    return config


def on_files(files: Files, config: Any) -> Files:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import zoo_parity
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    if RESULTS.is_file():
        content = zoo_parity.page(json.loads(RESULTS.read_text()))
    else:  # (a checkout that never ran the harness)
        content = "# Parity with RL Zoo\n\nNot measured in this checkout: `nox -s zoo-parity` writes the table.\n"
    files.append(File.generated(config, "reference/zoo-parity.md", content=content))
    return files
