"""Jobs elsewhere: launcher schemas, job CPU threads, and whether a run's or trial's owner is still alive."""
