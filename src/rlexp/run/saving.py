"""Atomic saving of agents and run files: a killed run never leaves a truncated file over a good one.

Every file is written next to its destination under a temporary name, flushed to disk and renamed
over the destination (``os.replace`` is atomic on POSIX file systems).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # SB3 loads only when an agent is saved: the sweeper and `rlexp --help` stay quick
    from stable_baselines3.common.base_class import BaseAlgorithm

MODEL_FILE = "model.zip"
VECNORMALIZE_FILE = "vecnormalize.pkl"
REPLAY_BUFFER_FILE = "replay_buffer.pkl"


def _fsync_dir(path: Path) -> None:
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
    _fsync_dir(dest.parent)


def check_replaceable(out: Path, inputs: list[Path], marker: str) -> Path:
    """``--out``, absolute; refused (before any work) where replacing it whole (``replaced_dir``) would
    lose files: the working directory or a dir above it or above an input, or a dir of other files (one
    without ``marker``, the file each of its kind holds)."""
    from rlexp.errors import ConfigError

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


def save_agent(model: BaseAlgorithm, dest_dir: Path, replay_buffer: bool = False) -> None:
    """model.zip (+ vecnormalize.pkl, + replay_buffer.pkl) in ``dest_dir``, each file atomically.

    For the final agent of a run; agents replaced during training go through ``save_agent_dir``. An
    agent whose parameters hold NaN or inf is refused (rlexp.run.diagnostics), so that no checkpoint, best
    or resume agent is of a diverged run.
    """
    from rlexp.run.diagnostics import check_parameters

    check_parameters(model)
    vecnormalize = model.get_vec_normalize_env()
    if vecnormalize is not None:
        atomic_write(dest_dir / VECNORMALIZE_FILE, lambda p: vecnormalize.save(str(p)))
    from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm

    if replay_buffer and isinstance(model, OffPolicyAlgorithm):
        atomic_write(dest_dir / REPLAY_BUFFER_FILE, lambda p: model.save_replay_buffer(p))
    atomic_write(dest_dir / MODEL_FILE, lambda p: model.save(p))


def save_agent_dir(model: BaseAlgorithm, dest_dir: Path, replay_buffer: bool = False) -> None:
    """A whole agent (model, statistics, buffer) in ``dest_dir``, replacing the old one as a unit.

    The new set is written to a hidden sibling and swapped in by renames, so ``dest_dir`` never
    pairs a model with another step's statistics; only between the two renames does the old set
    sit at ``.<name>.old``.
    """
    tmp = dest_dir.with_name(f".{dest_dir.name}.tmp{os.getpid()}")
    old = dest_dir.with_name(f".{dest_dir.name}.old")
    for stale in (tmp, old):
        shutil.rmtree(stale, ignore_errors=True)
    try:
        save_agent(model, tmp, replay_buffer)
        if dest_dir.exists():
            os.replace(dest_dir, old)
        os.replace(tmp, dest_dir)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    shutil.rmtree(old, ignore_errors=True)
    _fsync_dir(dest_dir.parent)


def remove_partial_saves(directory: Path, recursive: bool = False) -> None:
    """Drop what a killed process left half-written (hidden ``.*.tmp*`` files and dirs) in ``directory``
    (and below it, ``recursive``)."""
    for leftover in sorted(directory.rglob(".*.tmp*") if recursive else directory.glob(".*.tmp*")):
        if leftover.is_dir():
            shutil.rmtree(leftover, ignore_errors=True)
        else:
            leftover.unlink(missing_ok=True)


def recover_partial_saves(run_dir: Path) -> None:
    """What a kill during a save left anywhere in a run dir: half-written temporaries are dropped, and an
    agent dir (best/, resume/, a checkpoint) whose swap was cut between its two renames (only
    ``.<name>.old`` left) is put back."""
    remove_partial_saves(run_dir, recursive=True)
    for old in sorted([*run_dir.glob(".*.old"), *run_dir.glob("checkpoints/.step_*.old")]):
        dest = old.with_name(old.name[1 : -len(".old")])
        if old.is_dir() and not dest.exists():
            os.replace(old, dest)
        else:
            shutil.rmtree(old, ignore_errors=True)


def damage(agent_dir: Path) -> str | None:
    """What makes a saved agent unusable (None when it is intact): a model.zip that fails its checksums, or
    a pickle cut short. rlexp writes agents atomically, so this is a copy, a disk or a file system at fault."""
    model = agent_dir / MODEL_FILE
    try:
        with zipfile.ZipFile(model) as archive:
            bad = archive.testzip()
            if bad is not None or "data" not in archive.namelist():
                return f"{model}: {'bad checksum in ' + bad if bad else 'incomplete (no data member)'}"
    except Exception as err:  # zipfile raises what a damaged header trips over (BadZipFile, zlib.error, ...)
        return f"{model}: {type(err).__name__}: {' '.join(str(err).split())}"
    for name in (VECNORMALIZE_FILE, REPLAY_BUFFER_FILE):
        pickled = agent_dir / name
        if pickled.is_file() and not _ends_like_a_pickle(pickled):
            return f"{pickled}: cut short"
    return None


def _ends_like_a_pickle(path: Path) -> bool:
    with open(path, "rb") as f:  # a pickle's last opcode is STOP ("."); a cut file almost never ends so
        f.seek(0, os.SEEK_END)
        if f.tell() == 0:
            return False
        f.seek(-1, os.SEEK_END)
        return f.read(1) == b"."
