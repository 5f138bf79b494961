"""Watching training: finite checks, health, progress, evaluation, stopping when solved, the random
baseline. Nothing here builds an env or writes a file: it watches what rlexp.builders made."""
