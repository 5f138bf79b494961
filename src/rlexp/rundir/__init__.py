"""The run directory: its contract (file names, readers and writers), agents saved and opened, the lock, and
whether a dir holds a new, resumable, completed or someone else's run."""
