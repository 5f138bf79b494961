"""Atomic writes: a killed run never leaves a truncated file over a good one.

Every file is written next to its destination under a temporary name, flushed to disk and renamed
over the destination (``os.replace`` is atomic on POSIX file systems); a directory is written as a hidden
sibling and swapped in whole.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import socket
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
        with naming_the_path(dest):
            write(tmp)
            replace_durably(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)


@contextmanager
def naming_the_path(path: Path) -> Iterator[None]:
    """An OSError names ``path``, the file or dir being written, as the user gave it: never its temporary
    sibling (``.NAME.tmpPID``, ``.NAME.partial-...``) nor a file in one (``report.md`` of a dir being
    staged: its place in ``path``); nor ``None`` (a full disk while a library writes: ``None: No space
    left on device``)."""
    try:
        yield
    except OSError as err:
        shown = [_as_written(name, path) for name in (err.filename, err.filename2)]
        if shown != [err.filename, err.filename2] or (err.filename is None and err.errno is not None):
            raise OSError(err.errno, err.strerror, str(shown[0] or path), None, shown[1]) from err
        raise


def _as_written(name: str | bytes | None, dest: Path) -> str | None:
    """``name`` of an OSError where it is a temporary of ``dest`` (or in one): that place in ``dest``."""
    if not isinstance(name, str):
        return None if name is None else os.fsdecode(name)
    inner = Path(name)
    for temporary in (inner, *inner.parents):
        if temporary.parent == dest.parent and temporary.name.startswith((f".{dest.name}.", f".{dest.stem}.tmp")):
            return str(dest / inner.relative_to(temporary)) if inner != temporary else str(dest)
    return name


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
    sources = [_resolved(p) for p in inputs]
    out = _resolved(out, "--out ")
    for above in (Path.cwd(), *sources):
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


_HOST = socket.gethostname()  # in the names of staging dirs: a host cleans up its own only


def _resolved(path: Path, what: str = "") -> Path:
    try:
        return path.resolve()
    except (RuntimeError, OSError) as err:  # (Python 3.11-3.12: RuntimeError "Symlink loop from ...")
        raise ConfigError(f"{what}{path}: a symbolic link loop, or a link that cannot be followed ({err})") from None


@contextmanager
def _locked(directory: Path) -> Iterator[None]:
    """An exclusive lock on ``directory`` (flock on the dir itself: no file left behind), for the short
    steps where writers of one dir's siblings must not interleave; a file system without flock: unlocked."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # (releases the lock)


def _owner_is_gone(staging: Path) -> bool:
    """A staging dir whose writer holds no lock on it: its command was killed (a lock dies with its process)."""
    try:
        fd = os.open(staging, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    finally:
        os.close(fd)
    return True


def _remove_leftovers(dest: Path) -> None:
    """What killed writers of ``dest`` on this host left beside it (``.NAME.partial-HOST-*``,
    ``.NAME.old-HOST-*``); called with the parent locked, so that a live writer's staging dir (locked)
    and swap are left alone. Another host's are never touched: flock may hold on one host only (NFS)."""
    mine = f"{_HOST}-"
    for leftover in dest.parent.glob(f".{dest.name}.partial-{mine}*"):
        if _owner_is_gone(leftover):
            shutil.rmtree(leftover, ignore_errors=True)
    olds = sorted(dest.parent.glob(f".{dest.name}.old-{mine}*"), key=lambda p: p.stat().st_mtime)
    if olds and not dest.exists():  # killed between its two renames: the earlier dir goes back
        olds.pop().rename(dest)
    for leftover in olds:
        shutil.rmtree(leftover, ignore_errors=True)


@contextmanager
def replaced_dir(dest: Path) -> Iterator[Path]:
    """A new hidden sibling of ``dest`` to write into, swapped in whole for ``dest`` when the block ends
    without an error (and removed when it raises): never half a dir, nor an earlier one's stale files.
    Two writers at once write into their own siblings and swap in turn (the last one's dir stays); what
    killed writers left is removed."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    with _locked(dest.parent), naming_the_path(dest):  # (a dir that is not writable: said of dest)
        _remove_leftovers(dest)
        staging = Path(tempfile.mkdtemp(dir=dest.parent, prefix=f".{dest.name}.partial-{_HOST}-"))
        held = os.open(staging, os.O_RDONLY)  # locked while this process writes into it
        with contextlib.suppress(OSError):
            fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
    umask = os.umask(0)
    os.umask(umask)
    try:
        staging.chmod(0o777 & ~umask)  # mkdtemp's dir is private (0700); the swapped-in dir is a plain one
        with naming_the_path(dest):
            yield staging
        with _locked(dest.parent), naming_the_path(dest):
            old = dest.with_name(f".{dest.name}.old-{_HOST}-{staging.name.rsplit('-', 1)[-1]}")
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
        os.close(held)
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


STALE_AFTER = 600.0  # seconds without a write after which a dead process's temporary file is removed


def remove_stale_temporaries(directory: Path) -> None:
    """Drop the temporaries (``.NAME.tmpPID.SUFFIX``, atomic_write's) of commands killed while writing into
    ``directory`` (a run's videos/ or eval/): their process is gone from this host and they have not
    changed for STALE_AFTER (a writer on another host of a shared file system is not seen dead)."""
    import re
    import time

    if not directory.is_dir():
        return
    for leftover in directory.glob(".*.tmp*"):
        found = re.search(r"\.tmp(\d+)", leftover.name)
        try:
            idle = time.time() - leftover.stat().st_mtime
        except OSError:
            continue
        if found is None or idle < STALE_AFTER or _alive(int(found.group(1))):
            continue
        if leftover.is_dir():
            shutil.rmtree(leftover, ignore_errors=True)
        else:
            leftover.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # (another user's process)
        return True
    return True
