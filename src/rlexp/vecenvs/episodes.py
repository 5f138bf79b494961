"""Episode statistics for a vector env that has no per-env Monitor: what SB3's Monitor gives each env
(``info["episode"]`` at an episode's end, ``r`` rounded to 6 places, and one ``<rank>.monitor.csv`` per
env in SB3's format, which ``rlexp plot`` and the curves read), kept for all envs at once in arrays."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
from stable_baselines3.common.monitor import Monitor, ResultsWriter


class EpisodeStats:
    def __init__(self, n_envs: int, env_id: str, monitor_dir: Path | None, override_existing: bool = True) -> None:
        self.t_start = time.time()
        self.returns = np.zeros(n_envs, dtype=np.float64)
        self.lengths = np.zeros(n_envs, dtype=np.int64)
        self.writers: list[ResultsWriter] = []
        if monitor_dir is not None:
            header = {"t_start": self.t_start, "env_id": env_id}
            self.writers = [
                ResultsWriter(str(monitor_dir / f"{rank}.{Monitor.EXT}"), header, override_existing=override_existing)
                for rank in range(n_envs)
            ]

    def restart(self, indices: np.ndarray | slice = slice(None)) -> None:
        """Envs reset from outside (a reset of the vector env): their episodes start over, as Monitor's do."""
        self.returns[indices] = 0.0
        self.lengths[indices] = 0

    def step(self, rewards: np.ndarray, ends: np.ndarray, infos: list[dict[str, Any]]) -> None:
        """Counts one step of every env; ``ends``: the envs whose episode (the game, not a life) ended."""
        self.returns += rewards
        self.lengths += 1
        for i in np.flatnonzero(ends):
            episode = {"r": round(float(self.returns[i]), 6), "l": int(self.lengths[i]),
                       "t": round(time.time() - self.t_start, 6)}  # fmt: skip
            infos[i]["episode"] = episode
            if self.writers:
                self.writers[i].write_row(episode)
            self.returns[i] = 0.0
            self.lengths[i] = 0

    def close(self) -> None:
        for writer in self.writers:
            writer.close()
