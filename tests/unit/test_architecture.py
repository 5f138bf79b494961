"""The shape of the package, kept from rotting: the layers of pyproject.toml's import-linter contract, no
import cycle, every run-dir file name spelled in rlexp.rundir.contract alone, no subpackage a room of its own."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

from rlexp.rundir import contract

SRC = Path(__file__).parents[2] / "src" / "rlexp"


def test_the_layers_contract_holds():
    exe = shutil.which("lint-imports") or str(Path(sys.executable).parent / "lint-imports")
    result = subprocess.run([exe], cwd=SRC.parents[1], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and "1 kept, 0 broken" in result.stdout, result.stdout[-3000:]


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_cycle_between_modules_nor_subpackages():
    graph = grimp.build_graph("rlexp")  # (imports inside functions count too)
    edges = {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    assert _cycles(edges) == []
    packages: dict[str, set[str]] = {}
    for module, imported in edges.items():
        packages.setdefault(".".join(module.split(".")[:2]), set()).update(".".join(m.split(".")[:2]) for m in imported)
    assert _cycles({p: {q for q in imported if q != p and q in packages} for p, imported in packages.items()}) == []


def test_a_cycle_is_found_when_there_is_one():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


# the names only rlexp.rundir.contract spells: files and dirs of a run dir (a word such as "best" or
# "final" also names an --agent or a metric, so only the names that are the contract's alone)
CONTRACT_NAMES = {
    value
    for name, value in vars(contract).items()
    if name.isupper() and isinstance(value, str) and ("." in value or (name.endswith("_DIR") and len(value) > 5))
} - {"export"}  # (also the verb's name)


def _spelled(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            parts = set(node.value.replace("\\", "/").split("/"))
            hits = sorted(name for name in CONTRACT_NAMES if name in parts)
            found += [f"{path.relative_to(SRC)}:{node.lineno}: {hit!r}" for hit in hits]
    return found


def test_run_dir_names_are_spelled_in_the_contract_only():
    assert {"summary.json", "config.yaml", "evaluations.npz", "checkpoints", "model.zip"} <= CONTRACT_NAMES
    spelled = [hit for path in sorted(SRC.rglob("*.py")) if path.name != "contract.py" for hit in _spelled(path)]
    assert spelled == []


@pytest.mark.parametrize("package", sorted(p.name for p in SRC.iterdir() if (p / "__init__.py").is_file()))
def test_no_subpackage_is_a_room_of_its_own(package):
    lines = sum(len(path.read_text().splitlines()) for path in (SRC / package).rglob("*.py"))
    assert lines < 1500, f"rlexp.{package} has {lines} lines: split it by concern"


def test_the_manager_only_wires():
    assert len((SRC / "run" / "manager.py").read_text().splitlines()) <= 200


def test_every_subpackage_ships_in_the_wheel():
    """setuptools' explicit package list: a subpackage missing from it works in an editable install only."""
    import tomllib

    listed = set(tomllib.loads((SRC.parents[1] / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(("rlexp", *p.parent.relative_to(SRC).parts)).rstrip(".") for p in SRC.rglob("__init__.py")}
    assert found - listed == set()
    assert {p for p in listed if p.startswith("rlexp.") and p != "rlexp.conf"} - found == set()
