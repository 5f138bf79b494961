"""Checksums of what a run wrote: summary.json's ``checksums`` holds the sha256 of its config and of
each saved agent's files (final, best, checkpoints) as the run left them, so that a reading command
refuses a file changed since, in one line, and ``rlexp verify`` reports every file.

They tell a file changed by accident or by hand (a copy cut short, an edit, a swapped pickle) from the one
training wrote; someone who can rewrite the files can rewrite summary.json too, so they are no signature:
what stops a stranger's code from running is the allow-list (rlexp.rundir.trust, rlexp.rundir.pickles).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path

from rlexp.errors import ConfigError
from rlexp.rundir.contract import BEST_DIR, CONFIG_FILE, MODEL_FILE, VECNORMALIZE_FILE, checkpoint_steps

AGENT_FILES = (MODEL_FILE, VECNORMALIZE_FILE)  # (not replay buffers: large, and read with the allow-list)


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def recorded_files(run_dir: Path) -> list[Path]:
    """The files whose checksums a run records: its config and its agents' files, as they are now."""
    dirs = [run_dir, run_dir / BEST_DIR, *checkpoint_steps(run_dir).values()]
    found = [run_dir / CONFIG_FILE, *(d / name for d in dirs for name in AGENT_FILES)]
    return [p for p in found if p.is_file()]


def run_checksums(run_dir: Path) -> dict[str, str]:
    """summary.json's ``checksums``: each recorded file's path in the run dir -> its sha256."""
    return {p.relative_to(run_dir).as_posix(): sha256(p) for p in recorded_files(run_dir)}


def changed(run_dir: Path, recorded: dict[str, str], files: Iterable[Path]) -> list[Path]:
    """Those of ``files`` whose sha256 is not the one recorded (files the run recorded none for pass)."""
    out = []
    for path in files:
        try:
            key = path.relative_to(run_dir).as_posix()  # (the paths the run recorded: run_dir/...)
        except ValueError:  # not inside the run dir: nothing recorded for it
            continue
        if key in recorded and sha256(path) != recorded[key]:
            out.append(path)
    return out


def check_unchanged(run_dir: Path, recorded: dict[str, str] | None, files: Iterable[Path]) -> None:
    """Refuses, in one line, a file changed since the run recorded its checksum (``recorded``: those of a
    completed run; None: nothing to check)."""
    if not recorded:
        return
    found = changed(run_dir, recorded, [p for p in files if p is not None and p.is_file()])
    if found:
        raise ConfigError(
            f"{found[0]}: changed since the run wrote it (its sha256 is not the one in summary.json): "
            f"not opened; `rlexp verify {run_dir}` lists every file"
        )
