"""What a person watching a run sees: on a terminal a progress bar (steps/s, ETA, the last evaluation);
elsewhere (SLURM logs, a pipe) one line per periodic evaluation, or per tenth of training without
evaluations. SB3's tables stay off unless logger.verbose=2; the CSV and TensorBoard logs keep every scalar."""

from __future__ import annotations

import sys
import time
from datetime import timedelta
from typing import Any

import numpy as np
from stable_baselines3.common.callbacks import BaseCallback, EvalCallback


class Progress(BaseCallback):
    def __init__(self, target: int, evaluations: EvalCallback | None, terminal: bool | None = None) -> None:
        super().__init__()
        self.target, self.evaluations = target, evaluations
        self.terminal = sys.stdout.isatty() if terminal is None else terminal
        self.bar: Any = None
        self.seen = 0

    def _on_training_start(self) -> None:
        self.start, self.started = self.num_timesteps, time.perf_counter()
        self.seen = len(self.evaluations.evaluations_timesteps) if self.evaluations else 0
        self.next_line = self.num_timesteps + self.target // 10
        if self.terminal:
            from tqdm import tqdm

            self.bar = tqdm(
                total=self.target, initial=self.num_timesteps, unit="step", unit_scale=True, dynamic_ncols=True
            )

    def _on_step(self) -> bool:
        if self.bar is not None:
            self.bar.update(self.num_timesteps - self.bar.n)
        evaluated = self.evaluations is not None and len(self.evaluations.evaluations_timesteps) > self.seen
        if evaluated:
            self.seen = len(self.evaluations.evaluations_timesteps)
            self._report()
        elif self.evaluations is None and self.bar is None and self.num_timesteps >= self.next_line:
            self.next_line += self.target // 10
            self._report()
        return True

    def _report(self) -> None:
        elapsed = time.perf_counter() - self.started
        speed = (self.num_timesteps - self.start) / elapsed if elapsed > 0 else 0.0
        eta = timedelta(seconds=round((self.target - self.num_timesteps) / speed)) if speed > 0 else "?"
        scores = ""
        if self.evaluations is not None and self.evaluations.evaluations_results:
            last = self.evaluations.evaluations_results[-1]
            mean, std = float(np.mean(last)), float(np.std(last))
            scores = f"eval {mean:.2f} +/- {std:.2f}, best {self.evaluations.best_mean_reward:.2f}"
        if self.bar is not None:
            self.bar.set_postfix_str(scores, refresh=True)
            return
        share = f"({100 * self.num_timesteps / self.target:.0f}%)" if self.target else ""
        line = f"rlexp: step {self.num_timesteps:,}/{self.target:,} {share}"
        print(f"{line}{' ' + scores if scores else ''} | {speed:,.0f} steps/s, ETA {eta}", flush=True)

    def _on_training_end(self) -> None:
        if self.bar is not None:
            self.bar.close()
