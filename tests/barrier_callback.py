"""A user callback for tests/test_launchers.py: it holds each job at its training start until ``parties``
jobs have started, so the jobs of one batch all get past it only if they run at the same time (run one
after another, the first times out)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from stable_baselines3.common.callbacks import BaseCallback


class Barrier(BaseCallback):
    def __init__(self, dir: str, parties: int, timeout: float = 300.0) -> None:
        super().__init__()
        self.dir, self.parties, self.timeout = Path(dir), parties, timeout

    def _on_training_start(self) -> None:
        self.dir.mkdir(exist_ok=True)
        (self.dir / str(os.getpid())).touch()
        deadline = time.monotonic() + self.timeout
        while len(list(self.dir.iterdir())) < self.parties:
            if time.monotonic() > deadline:
                raise RuntimeError("the jobs of a batch did not run at the same time")
            time.sleep(0.05)

    def _on_step(self) -> bool:
        return True


class Gate(BaseCallback):
    """Holds each run at its training start (or, with ``at_step``, once it has trained that many steps)
    until a file ``open`` appears in ``dir`` (each waiting run leaves a file named after its pid there):
    a test sees who is running, acts, then opens the gate."""

    def __init__(self, dir: str, timeout: float = 600.0, at_step: int = 0) -> None:
        super().__init__()
        self.dir, self.timeout, self.at_step = Path(dir), timeout, at_step
        self.passed = False

    def _wait(self) -> None:
        self.passed = True
        self.dir.mkdir(exist_ok=True)
        (self.dir / str(os.getpid())).touch()
        deadline = time.monotonic() + self.timeout
        while not (self.dir / "open").exists():
            if time.monotonic() > deadline:
                raise RuntimeError("the gate was never opened")
            time.sleep(0.05)

    def _on_training_start(self) -> None:
        if not self.at_step:
            self._wait()

    def _on_step(self) -> bool:
        if self.at_step and not self.passed and self.num_timesteps >= self.at_step:
            self._wait()
        return True


class FirstWaits(BaseCallback):
    """The first run to start training waits there until ``parties`` runs have started; the others go on.
    Two at a time, a third run starts only if a slot is refilled as soon as the second ends (a steady
    search); a search that waits for both of a batch before the third never gets the first past here."""

    def __init__(self, dir: str, parties: int, timeout: float = 600.0) -> None:
        super().__init__()
        self.dir, self.parties, self.timeout = Path(dir), parties, timeout

    def _on_training_start(self) -> None:
        self.dir.mkdir(exist_ok=True)
        (self.dir / str(os.getpid())).touch()
        try:
            os.close(os.open(self.dir / "first", os.O_CREAT | os.O_EXCL))  # (exactly one run creates it)
        except FileExistsError:
            return
        deadline = time.monotonic() + self.timeout
        while len([p for p in self.dir.iterdir() if p.name != "first"]) < self.parties:
            if time.monotonic() > deadline:
                raise RuntimeError("no slot was refilled while the first run waited")
            time.sleep(0.05)

    def _on_step(self) -> bool:
        return True
