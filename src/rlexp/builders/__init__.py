"""What trains: envs, the model and its backend, callbacks, schedules, noise, logger and torch settings."""
