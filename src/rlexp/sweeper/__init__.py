"""A hyperparameter search run by one sweeper: the loop that asks Optuna for trials, launches their jobs and
tells Optuna how they ended, on the pieces of rlexp.search that it shares with the trials' jobs."""
