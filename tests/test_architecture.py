"""The shape of the package, kept from rotting: pyproject.toml's import-linter contracts (layers, no import
cycle), every run-dir file name spelled in rlexp.rundir.contract alone, summary.json read as one typed record,
no subpackage a room of its own."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from rlexp.rundir import contract

pytestmark = pytest.mark.unit  # pure logic in-process, no training (pytest -m unit)

SRC = Path(__file__).parents[1] / "src" / "rlexp"


def test_the_import_contracts_hold():
    """pyproject.toml's import-linter contracts: the layers, and no import cycle among the subpackages nor
    among the modules of any one package (its acyclic_siblings contract; imports inside functions count)."""
    exe = shutil.which("lint-imports") or str(Path(sys.executable).parent / "lint-imports")
    result = subprocess.run([exe], cwd=SRC.parents[1], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and "2 kept, 0 broken" in result.stdout, result.stdout[-3000:]
    assert "acyclic_siblings" in (SRC.parents[1] / "pyproject.toml").read_text()


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


def _reads_summary_json(path: Path) -> bool:
    tree = ast.parse(path.read_text())
    return any(isinstance(node, (ast.Name, ast.Attribute, ast.alias)) and "read_summary" in ast.dump(node)
               for node in ast.walk(tree))  # fmt: skip


def test_summary_json_is_read_through_the_typed_record_only():
    """Outside the run-dir layer, summary.json is read as a RunRecord (rundir/record.py), never as a dict
    whose keys each reader spells; the API hands users the dict itself (Run.summary)."""
    readers = sorted(
        str(path.relative_to(SRC.parent))
        for path in [*SRC.rglob("*.py"), *(SRC.parent / "hydra_plugins").rglob("*.py")]
        if "rundir" not in path.parts and _reads_summary_json(path)
    )
    assert readers == ["rlexp/api/runs.py"]


def test_run_dir_names_are_spelled_in_the_contract_only():
    assert {"summary.json", "config.yaml", "evaluations.npz", "checkpoints", "model.zip"} <= CONTRACT_NAMES
    spelled = [hit for path in sorted(SRC.rglob("*.py")) if path.name != "contract.py" for hit in _spelled(path)]
    assert spelled == []


SCREEN = 80  # lines: a function a reader takes in at once


def _modules() -> list[Path]:
    return sorted([*SRC.rglob("*.py"), *(SRC.parent / "hydra_plugins").rglob("*.py")])


def test_every_module_says_its_one_job_in_its_first_line():
    """What the size caps stood for: a module has one job, which its docstring's first line says."""
    silent = [
        str(path.relative_to(SRC.parent))
        for path in _modules()
        if not (ast.get_docstring(ast.parse(path.read_text())) or "").strip()
    ]
    assert silent == [], f"modules that do not say what they are for: {silent}"


def test_every_function_fits_a_screen():
    """What the size caps stood for: a function a reader sees whole (a long one is split by what it does)."""
    long = [
        f"{path.relative_to(SRC.parent)}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for path in _modules()
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and (node.end_lineno or node.lineno) - node.lineno + 1 > SCREEN
    ]
    assert long == [], f"functions longer than a screen ({SCREEN} lines): {long}"


def test_an_env_family_is_named_in_its_own_module_only():
    """What a family is (Atari's preprocessing, MiniGrid's stochastic evaluation...) is a field of its entry in
    rlexp.config.env_families: no other module compares a family's name, nor spells its wrappers' classes
    (Atari's AtariWrapper) or the variable its rendering reads (MuJoCo's MUJOCO_GL)."""
    from rlexp.config.env_families import BY_NAME, FAMILIES

    spelled = {*BY_NAME, *(t for f in FAMILIES for t in f.wrappers.values()), *(f.headless_gl for f in FAMILIES)}
    named = [
        f"{path.relative_to(SRC)}:{node.lineno}: {node.value!r}"
        for path in sorted(SRC.rglob("*.py"))
        if path.name != "env_families.py"
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in spelled - {None}
    ]
    assert named == []


def test_every_subpackage_ships_in_the_wheel():
    """setuptools' explicit package list: a subpackage missing from it works in an editable install only."""

    listed = set(tomllib.loads((SRC.parents[1] / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(("rlexp", *p.parent.relative_to(SRC).parts)).rstrip(".") for p in SRC.rglob("__init__.py")}
    assert found - listed == set()
    assert {p for p in listed if p.startswith("rlexp.") and p != "rlexp.conf"} - found == set()


def test_the_tests_are_laid_out_like_the_package():
    """A test module sits in the folder of the subpackage it tests (tests/docs: the docs and README), so a
    reader finds a module's tests by its path; this module alone, about the package as a whole, is at the top."""
    tests = Path(__file__).parent
    packages = {p.name for p in SRC.iterdir() if (p / "__init__.py").is_file()} | {"docs"}
    misplaced = [
        str(module.relative_to(tests))
        for module in tests.rglob("test_*.py")
        if module.parent.name not in packages and module != Path(__file__)
    ]
    assert misplaced == [], f"test modules outside a folder named for a subpackage of rlexp: {misplaced}"


# folder names that tools read as output and skip or hide: pytest's default norecursedirs, GitHub's Python
# .gitignore template, black's default excludes
OUTPUT_NAMES = {"build", "dist", "site", "venv", "env", "node_modules", "_build", "buck-out", "CVS", "_darcs"}


def test_no_module_or_folder_is_named_as_tools_name_output():
    """A package named build was skipped by pytest's defaults and hidden by common .gitignore files: no
    module, package or test folder of rlexp takes such a name."""
    roots = [SRC, SRC.parent / "hydra_plugins", Path(__file__).parent]
    named = [
        str(path.relative_to(SRC.parents[1]))
        for root in roots
        for path in root.rglob("*")
        if path.stem in OUTPUT_NAMES and "__pycache__" not in path.parts
    ]
    assert named == [], f"named as tools name output: {named}"


def test_no_two_modules_share_a_name():
    """Modules are named for what they hold: two ``runs.py`` or two ``record.py`` make a reader open both to
    find the one they want (``__init__.py`` aside)."""
    paths = [p for root in (SRC, SRC.parent / "hydra_plugins") for p in root.rglob("*.py") if p.name != "__init__.py"]
    by_name: dict[str, list[str]] = {}
    for path in paths:
        by_name.setdefault(path.name, []).append(str(path.relative_to(SRC.parent)))
    assert {name: where for name, where in by_name.items() if len(where) > 1} == {}


def test_what_a_path_is_is_decided_in_one_place():
    """Whether a path is an rlexp run, a search trial, an RL Zoo log folder or a model zip is decided by
    rlexp.zoo.path_kinds.what_is alone: no other module asks the zoo's finder."""
    callers = sorted(
        str(path.relative_to(SRC.parent))
        for path in SRC.rglob("*.py")
        if "find_zoo_run(" in path.read_text() and path.name not in ("path_kinds.py", "log_folders.py")
    )
    assert callers == []


def test_hydra_instantiates_through_its_execution_whitelist_only():
    """Every instantiate of rlexp names what it allows Hydra to call (rlexp.config.hydra_versions): a bare
    hydra.utils.instantiate warns on Hydra 1.4 and would build what a run dir's config computes."""
    found = []
    for path in [*SRC.rglob("*.py"), *(SRC.parent / "hydra_plugins").rglob("*.py")]:
        if path.name == "hydra_versions.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.ImportFrom) and node.module == "hydra.utils"
                else []
            )
            attribute = (
                isinstance(node, ast.Attribute)
                and node.attr == "instantiate"
                and ast.unparse(node) == "hydra.utils.instantiate"
            )
            if "instantiate" in names or attribute:
                found.append(f"{path.relative_to(SRC.parent)}:{node.lineno}")
    assert found == [], f"hydra.utils.instantiate outside rlexp.config.hydra_versions: {found}"


# what Hydra and Optuna give only by private names, and the one adapter that may read each
PRIVATE_NAMES = {
    "_return_value": "config/hydra_versions.py",  # hydra.core.utils.JobReturn
    "_storage": "search/optuna_private.py",  # optuna.Study
    "_study_id": "search/optuna_private.py",
    "_trial_id": "search/optuna_private.py",  # optuna.Trial, FrozenTrial
}


def test_private_names_of_hydra_and_optuna_are_read_in_their_adapters_only():
    """An attribute or keyword of Hydra's or Optuna's that they keep private is read in one adapter, which
    says why (rlexp.config.hydra_versions, rlexp.search.optuna_private): a release that renames it breaks
    there alone. Neither rlexp nor its plugins read one anywhere else."""
    found = []
    for path in [*SRC.rglob("*.py"), *(SRC.parent / "hydra_plugins").rglob("*.py")]:
        where = path.relative_to(SRC.parent)
        for node in ast.walk(ast.parse(path.read_text())):
            name = node.attr if isinstance(node, ast.Attribute) else node.arg if isinstance(node, ast.keyword) else None
            if name in PRIVATE_NAMES and where != Path("rlexp") / PRIVATE_NAMES[name]:
                found.append(f"{where}:{node.lineno}: {name}")
    assert found == [], f"private names of Hydra or Optuna outside their adapter: {found}"


def test_the_plugins_are_hydras_glue_over_rlexp():
    """rlexp's Hydra plugins import rlexp, and rlexp imports them only to register them with Hydra
    (rlexp.run.hydra_session.register_hydra); the sweeper's plugin is a Sweeper subclass whose methods hand over
    to rlexp.sweeper, the search loop, which the layers contract checks."""
    importers = {
        str(path.relative_to(SRC.parent))
        for path in SRC.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, (ast.Import, ast.ImportFrom))
        and any(
            name.startswith("hydra_plugins.rlexp_")
            for name in ([node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names])
        )
    }
    assert importers == {"rlexp/run/hydra_session.py"}
    plugin = ast.parse((SRC.parent / "hydra_plugins" / "rlexp_optuna_sweeper" / "sweeper.py").read_text())
    defined = [node for node in plugin.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))]
    assert [node.name for node in defined] == ["OptunaSweeper"]
    methods = {node.name for node in defined[0].body if isinstance(node, ast.FunctionDef)}
    assert methods == {"__init__", "setup", "sweep"}


def test_every_type_ignore_says_why():
    """pyright checks src/ ([tool.pyright]; an unneeded ignore is an error): one it needs names its rule and
    says, after it, why the types cannot say it."""
    bare = [
        f"{path.relative_to(SRC.parent)}:{number}"
        for path in _modules()
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if "# type: ignore" in line and not re.search(r"# type: ignore\[[\w,-]+\]  # \S", line)
    ]
    assert bare == [], f"type: ignore without its rule and reason: {bare}"


# where a whole config enters rlexp untyped (Hydra's or the user's), each with why; past them, the schema's types
WHOLE_CONFIG_ENTRIES = {
    "rlexp/cli.py:app": "Hydra's task function",
    "rlexp/commands/train.py:train_job": "Hydra's task (and rlexp.train's): casts once, as_experiment",
    "rlexp/commands/check.py:_console_logging": "Hydra's own config (hydra.job_logging)",
    "rlexp/run/front_door.py:on_run_start": "a Hydra callback: Hydra's config",
    "rlexp/run/front_door.py:on_multirun_start": "a Hydra callback: Hydra's config",
    "rlexp/run/seed_report.py:on_multirun_start": "a Hydra callback: Hydra's config",
    "rlexp/run/seed_report.py:on_multirun_end": "a Hydra callback: Hydra's config",
    "rlexp/config/validation.py:job_config": "cuts Hydra's config to the experiment's, typed",
    "rlexp/config/schema.py:as_experiment": "the cast itself",
    "rlexp/config/schema.py:as_node": "the cast back, for what walks keys by name",
    "rlexp/api/compose.py:overrides_of": "the config a user hands rlexp.train",
    "rlexp/api/compose.py:_plain": "the config a user hands rlexp.train",
    "hydra_plugins/rlexp_optuna_sweeper/sweeper.py:setup": "Hydra's sweeper plugin: the sweep's config",
    "hydra_plugins/rlexp_launcher/launcher.py:setup": "Hydra's launcher plugin: the sweep's config, for its jobs",
    "hydra_plugins/rlexp_launcher/launcher.py:__init__": "one of its jobs: the sweep's config, composed in the job",
    "rlexp/sweeper/loop.py:__init__": "the sweep's config, which the search composes again and records",
    "rlexp/sweeper/composing.py:_set": "a trial's values set on Hydra's composition of its job, as Hydra sets them",
    "rlexp/sweeper/opening.py:open_study": "compares the sweep's composed config with the study's",
    "rlexp/sweeper/command_line.py:hide_password": "sets Hydra's own record of the storage URL",
    "rlexp/search/space.py:parse_search_space": "any key of the config may be searched",
    "rlexp/search/study.py:of": "the study records the composed config",
}


def _config_parameters() -> list[tuple[str, str]]:
    found = []
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for arg in [*node.args.args, *node.args.kwonlyargs]:
                    if arg.arg in ("cfg", "config") and arg.annotation is not None:
                        found.append((f"{path.relative_to(SRC.parent)}:{node.name}", ast.unparse(arg.annotation)))
    return found


def test_the_config_travels_typed():
    """A function takes the typed piece of the config it reads (EnvConfig, CallbacksConfig, AlgoConfig...);
    the whole ExperimentConfig only in the run's wiring, the commands and the API; a whole config untyped
    (DictConfig, Any) only where it enters rlexp (WHOLE_CONFIG_ENTRIES)."""
    found = _config_parameters()
    whole = [where for where, kind in found if kind == "ExperimentConfig"]
    assert [w for w in whole if not w.startswith(("rlexp/run/", "rlexp/commands/", "rlexp/api/"))] == []
    untyped = {where for where, kind in found if kind in ("DictConfig", "Any", "DictConfig | None")}
    assert untyped == set(WHOLE_CONFIG_ENTRIES), untyped ^ set(WHOLE_CONFIG_ENTRIES)
