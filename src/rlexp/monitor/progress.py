"""What a person watching a run sees: on a terminal a progress bar (steps/s, ETA, the last evaluation);
elsewhere (SLURM logs, a pipe) one line per periodic evaluation, or per tenth of training when no
evaluation falls within it. SB3's tables stay off unless logger.verbose=2; the CSV and TensorBoard logs keep every scalar."""

from __future__ import annotations

import logging
import sys
import time
from datetime import timedelta
from typing import Any

import numpy as np
from stable_baselines3.common.callbacks import BaseCallback, EvalCallback

# (logged: the console shows the line, and RUN/rlexp.log keeps it with what else the run said)
log = logging.getLogger(__name__)


def _a_terminal_to_draw_on() -> bool:
    """stdout is a terminal wide enough for a bar (a pseudo-terminal may say 0 columns: tqdm would draw
    nothing at all, and a run would be silent)."""
    import shutil

    return sys.stdout.isatty() and shutil.get_terminal_size(fallback=(0, 0)).columns >= 40


class Progress(BaseCallback):
    """``target``: the step count learn() stops at (a continued agent's steps count from its own);
    ``evaluations``: the run's EvalCallback, whose results (it records them: log_path is set) are shown;
    ``origin``: the step the run started from (a continued agent's), where the run's own steps count from
    (a resumed run counts from its origin too, not from where it resumed)."""

    def __init__(
        self, target: int, evaluations: EvalCallback | None, terminal: bool | None = None, origin: int = 0
    ) -> None:
        super().__init__()
        self.target, self.evaluations, self.origin = target, evaluations, origin
        self.terminal = _a_terminal_to_draw_on() if terminal is None else terminal
        self.bar: Any = None
        self.seen = 0

    def _on_training_start(self) -> None:
        self.start, self.started = self.num_timesteps, time.perf_counter()
        self.tenth = max((self.target - self.start) // 10, 1)
        self.next_tenth = self.start + self.tenth
        self.seen = len(self.evaluations.evaluations_timesteps) if self.evaluations else 0  # restored on resume
        # EvalCallback counts calls, one per step of all envs
        every = self.evaluations.eval_freq * self.training_env.num_envs if self.evaluations else None
        self.by_tenths = every is None or every > self.target - self.start
        if self.terminal:
            from tqdm import tqdm

            self.bar = tqdm(
                total=self.target - self.origin,
                initial=self.num_timesteps - self.origin,
                unit="step",
                unit_scale=True,
                file=sys.stdout,
            )

    def _on_step(self) -> bool:
        if self.bar is not None:
            self.bar.update(min(self.num_timesteps, self.target) - self.origin - self.bar.n)
        if self.evaluations is not None and len(self.evaluations.evaluations_timesteps) > self.seen:
            self.seen = len(self.evaluations.evaluations_timesteps)
            self._report()
        if self.by_tenths and self.num_timesteps >= self.next_tenth:
            if self.num_timesteps < self.target:
                self._report()
            self.next_tenth = self.start + ((self.num_timesteps - self.start) // self.tenth + 1) * self.tenth
        return True

    def _report(self) -> None:
        elapsed = time.perf_counter() - self.started
        speed = (self.num_timesteps - self.start) / elapsed if elapsed > 0 else 0.0
        left = max(self.target - self.num_timesteps, 0)
        eta = timedelta(seconds=round(left / speed)) if speed > 0 else "?"
        scores = ""
        if self.evaluations is not None and self.evaluations.evaluations_results:
            last = self.evaluations.evaluations_results[-1]
            scores = f"eval {np.mean(last):.2f} +/- {np.std(last):.2f}, best {self.evaluations.best_mean_reward:.2f}"
        if self.bar is not None:
            self.bar.set_postfix_str(scores, refresh=True)
            return
        done = min(self.num_timesteps, self.target)
        share = 100 * (done - self.origin) / max(self.target - self.origin, 1)
        line = f"step {done - self.origin:,}/{self.target - self.origin:,} ({share:.0f}%"
        line += f"; the agent's step {done:,})" if self.origin else ")"
        log.info("%s%s | %s steps/s, ETA %s", line, " " + scores if scores else "", f"{speed:,.0f}", eta)

    def close(self) -> None:
        """Ends the bar, also when learn() ended on an exception (a stop signal, a divergence)."""
        if self.bar is not None:
            self.bar.close()
            self.bar = None
