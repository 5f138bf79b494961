"""rlexp.zoo.path_kinds: what a path given to rlexp is, decided in one place."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlexp.zoo.path_kinds import PathKind, what_is

pytestmark = pytest.mark.unit


def _touch(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("")
    return path


def test_each_kind_of_path(tmp_path: Path) -> None:
    run = tmp_path / "run"
    _touch(run / "config.yaml")
    _touch(run / "summary.json")
    model = _touch(run / "best" / "model.zip")
    refused = tmp_path / "refused"  # a run refused before it started: config.yaml, no summary.json
    _touch(refused / "config.yaml")
    zoo = tmp_path / "logs" / "ppo" / "CartPole-v1_1"
    _touch(zoo / "CartPole-v1" / "args.yml")
    _touch(zoo / "CartPole-v1" / "config.yml")
    zoo_zip = _touch(zoo / "CartPole-v1.zip")
    trial = tmp_path / "trial"
    _touch(trial / "seed_1" / "config.yaml")
    _touch(trial / "seed_0" / "config.yaml")

    found = what_is(run)
    assert (found.kind, found.configured, found.started) == (PathKind.RUN, True, True)
    found = what_is(refused)
    assert (found.kind, found.configured, found.started) == (PathKind.RUN, True, False)
    assert what_is(model).kind is PathKind.MODEL and what_is(model).zoo is None
    found = what_is(zoo)
    assert found.kind is PathKind.ZOO and found.zoo is not None and found.zoo.folder == zoo
    assert what_is(zoo_zip).kind is PathKind.ZOO
    found = what_is(trial)
    assert (found.kind, found.seeds) == (PathKind.TRIAL, ("seed_0", "seed_1"))
    assert what_is(tmp_path / "missing").kind is PathKind.NOTHING
    assert what_is(run / "best").kind is PathKind.NOTHING
