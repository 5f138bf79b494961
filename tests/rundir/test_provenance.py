"""summary.json's provenance: the git state of a checkout in one git call, and what a process runs looked up
once."""

from __future__ import annotations

import subprocess
import sys

import pytest

from rlexp.rundir.provenance import git_commit, provenance

pytestmark = pytest.mark.unit  # pure logic in-process, no training (pytest -m unit)

_spawned: list[str] = []  # the command lines of the processes started while a test counts them
_counting = [False]


def _count(event: str, args: tuple[object, ...]) -> None:
    if _counting[0] and event == "subprocess.Popen":
        _spawned.append(str(args[1]))


sys.addaudithook(_count)  # (audit hooks stay for the process: this one counts only inside a test)


def _git(repo, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout.strip()


def test_a_checkouts_commit_and_uncommitted_changes(tmp_path):
    assert git_commit(tmp_path) is None  # no checkout
    _git(tmp_path, "init", "-q")
    assert git_commit(tmp_path) is None  # a checkout without a commit
    (tmp_path / "a.txt").write_text("a")
    _git(tmp_path, "add", "a.txt")
    _git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "a")
    assert git_commit(tmp_path) == {"commit": _git(tmp_path, "rev-parse", "HEAD"), "dirty": False}
    (tmp_path / "b.txt").write_text("b")  # untracked
    assert git_commit(tmp_path) == {"commit": _git(tmp_path, "rev-parse", "HEAD"), "dirty": True}


def test_the_versions_and_rlexps_source_are_looked_up_once_a_process_the_working_dir_each_run(tmp_path, monkeypatch):
    """A search's trials run in its sweeper's process, each recording its provenance: only the working
    directory's git state is looked up again (one git call), not rlexp's source nor the packages' versions."""
    monkeypatch.chdir(tmp_path)
    first = provenance(sbx=False)
    _spawned.clear()
    _counting[0] = True
    try:
        again = provenance(sbx=False)
    finally:
        _counting[0] = False
    assert again["versions"] == first["versions"] and again["git"] == first["git"]
    assert len(_spawned) == 1 and "'status'" in _spawned[0]
