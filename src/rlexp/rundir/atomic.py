"""Atomic writes: a killed run never leaves a truncated file over a good one.

Every file is written next to its destination under a temporary name, flushed to disk and renamed
over the destination (``os.replace`` is atomic on POSIX file systems); a directory is written as a hidden
sibling and swapped in whole.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rlexp.errors import ConfigError


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(dest: Path, write: Callable[[Path], Any]) -> None:
    """Call ``write(tmp_path)`` and move the result over ``dest`` in one step."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    # keep the suffix last: SB3 appends ".zip"/".pkl" to paths without one
    tmp = dest.with_name(f".{dest.stem}.tmp{os.getpid()}{dest.suffix}")
    try:
        write(tmp)
        replace_durably(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)


def replace_durably(tmp: Path, dest: Path) -> None:
    """Moves a finished ``tmp`` over ``dest`` in one step, flushed to disk first and after."""
    with open(tmp, "rb+") as f:
        os.fsync(f.fileno())
    os.replace(tmp, dest)
    fsync_dir(dest.parent)


def check_replaceable(out: Path, inputs: list[Path], marker: str) -> Path:
    """``--out``, absolute; refused (before any work) where replacing it whole (``replaced_dir``) would
    lose files: the working directory or a dir above it or above an input, or a dir of other files (one
    without ``marker``, the file each of its kind holds)."""
    out = out.resolve()
    for above in (Path.cwd(), *(p.resolve() for p in inputs)):
        if out == above or out in above.parents:
            raise ConfigError(f"--out {out}: holds {above} (or is it); it is replaced whole: choose a new dir")
    if out.is_dir() and not (out / marker).is_file() and any(out.iterdir()):
        raise ConfigError(f"--out {out}: holds files but no {marker}; it is replaced whole: choose another")
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out}: is a file")
    above = next(p for p in out.parents if p.exists())
    if not above.is_dir():
        raise ConfigError(f"--out {out}: {above} is a file")
    return out


@contextmanager
def replaced_dir(dest: Path) -> Iterator[Path]:
    """A new hidden sibling of ``dest`` to write into, swapped in whole for ``dest`` when the block ends
    without an error (and removed when it raises): never half a dir, nor an earlier one's stale files;
    two writers at once do not write into each other's."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=dest.parent, prefix=f".{dest.name}.partial-"))
    umask = os.umask(0)
    os.umask(umask)
    staging.chmod(0o777 & ~umask)  # mkdtemp's dir is private (0700); the swapped-in dir is a plain one
    try:
        yield staging
        old = dest.with_name(f".{dest.name}.old-{staging.name.rsplit('-', 1)[-1]}")
        if dest.exists():
            dest.rename(old)
        try:
            staging.rename(dest)
        except OSError:
            if old.exists():
                old.rename(dest)  # the earlier dir back in place
            raise
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def atomic_write_text(dest: Path, text: str) -> None:
    atomic_write(dest, lambda tmp: tmp.write_text(text))


def atomic_write_json(dest: Path, data: dict[str, Any]) -> None:
    atomic_write_text(dest, json.dumps(data, indent=2, default=str) + "\n")


def remove_partial_saves(directory: Path, recursive: bool = False) -> None:
    """Drop what a killed process left half-written (hidden ``.*.tmp*`` files and dirs) in ``directory``
    (and below it, ``recursive``)."""
    for leftover in sorted(directory.rglob(".*.tmp*") if recursive else directory.glob(".*.tmp*")):
        if leftover.is_dir():
            shutil.rmtree(leftover, ignore_errors=True)
        else:
            leftover.unlink(missing_ok=True)
