"""One training run: envs, model, callbacks, schedules, noise, saving, summary, run-dir lifecycle, preemption."""
