"""The algorithm registry (rlexp.config.algorithms): each entry composes, its classes import and its modules
admit them, and an algorithm added the way docs/contributing.md says (one entry, its schema, its YAML) trains
through the `rlexp` command."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from importlib.resources import files
from pathlib import Path

import pytest
from conftest import FAST, compose_cfg
from hydra.utils import get_class

from rlexp.config.algorithms import ALGORITHMS, Algorithm, algorithm, by_target, by_zoo_name, register
from rlexp.config.schema import PPOConfig
from rlexp.errors import ConfigError
from rlexp.rundir.trust import allowed

CONF = files("rlexp.conf")
TESTS = Path(__file__).resolve().parents[1]


@pytest.mark.unit
@pytest.mark.parametrize("entry", ALGORITHMS, ids=lambda a: a.name)
def test_each_entry_composes_as_its_class(entry: Algorithm):
    cfg, choices = compose_cfg([f"algo={entry.name}", "~tuned"])
    assert choices["algo"] == entry.name and cfg.algo._target_ == entry.target
    assert (CONF / "algo" / f"{entry.name}.yaml").is_file()
    assert algorithm(entry.name) is entry and by_target(entry.target) is entry
    if entry.zoo is not None:
        assert by_zoo_name(entry.zoo) is entry
    if entry.search_space is not None:
        assert compose_cfg([f"algo={entry.name}", "~tuned"])[0].search_space


@pytest.mark.unit
@pytest.mark.parametrize("entry", ALGORITHMS, ids=lambda a: a.name)
def test_each_entrys_classes_import_and_are_trusted(entry: Algorithm):
    """Its class is the one its modules name, so a stranger's run of it opens (rlexp.rundir.trust); its sbx
    class (where sbx is installed) is one."""
    cls = get_class(entry.target)
    assert any(cls.__module__.startswith(m) or cls.__module__ == m.rstrip(".") for m in entry.modules)
    assert allowed(entry.target)
    if entry.sbx is not None and importlib.util.find_spec("sbx") is not None:
        assert get_class(entry.sbx).__name__ == cls.__name__


@pytest.mark.unit
def test_a_name_or_class_registered_twice_is_refused():
    with pytest.raises(ConfigError, match="ppo is registered already"):
        register(Algorithm("ppo2", PPOConfig, modules=()))


def test_an_algorithm_added_by_one_entry_and_its_yaml_trains(tmp_path):
    """The made-up CountingPPO (tests/made_up_algorithm.py: its class, schema and entry) and its
    conf/algo/counting_ppo.yaml on the search path: the `rlexp` command trains it a few hundred steps, its
    own key taking a value from the command line."""
    (tmp_path / "conf" / "algo").mkdir(parents=True)
    (tmp_path / "conf" / "algo" / "counting_ppo.yaml").write_text(
        "# PPO that counts its updates (tests/made_up_algorithm.py)\n"
        "defaults:\n  - /algo_counting_ppo_schema@_here_\n  - _self_\n"
    )
    args = [
        "algo=counting_ppo",
        "env=cartpole",
        "algo.n_steps=64",
        "algo.updates_kept=3",
        *FAST,
        f"hydra.searchpath=[file://{tmp_path / 'conf'}]",
        f"hydra.run.dir={tmp_path / 'run'}",
    ]
    command = "import sys, made_up_algorithm; from rlexp.__main__ import console; sys.argv[:2] = ['rlexp']; console()"
    path = os.pathsep.join(p for p in (str(TESTS), os.environ.get("PYTHONPATH")) if p)
    done = subprocess.run(
        [sys.executable, "-c", command, "rlexp", *args],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": path},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["status"] == "completed" and summary["steps_done"] >= 256
    assert summary["algo_class"] == "made_up_algorithm.CountingPPO"
    saved = (tmp_path / "run" / "config.yaml").read_text()
    assert "updates_kept: 3" in saved
