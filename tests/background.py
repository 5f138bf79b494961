"""`rlexp` started in the background, for the tests that signal, kill or wait on a run while it trains."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

# an env whose close signals its own process (copied into a test's dir as late.py: env.id=late:LateSignalEnv)
LATE_SIGNAL_ENV = Path(__file__).parent / "late_signal_env.py"


def start(tmp_path, args: list[str], stderr: int = subprocess.DEVNULL) -> subprocess.Popen:
    """`rlexp <args>` in the background, in run dir tmp_path/run."""
    return subprocess.Popen(
        [sys.executable, "-m", "rlexp", *args, "hydra.run.dir=run"],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=stderr,
        text=True,
    )


@contextmanager
def ended(proc: subprocess.Popen) -> Iterator[subprocess.Popen]:
    """The process, killed (with its process group when it has its own) if the test fails before it ends."""
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def wait_for_file(path, proc: subprocess.Popen, timeout: float = 300) -> None:
    """Until ``path`` exists (e.g. evaluations.npz: the run is a known number of steps in)."""
    deadline = time.time() + timeout
    while time.time() < deadline and proc.poll() is None:
        if path.is_file():
            return
        time.sleep(0.05)
    raise AssertionError(f"no {path}: {proc.poll()=}")
