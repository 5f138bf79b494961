"""A run's life in its run dir: who holds it (lock), stopping on a signal with an agent saved (preemption),
where a stopped or abandoned run continues (resume), and whether a dir may take a run (state)."""
