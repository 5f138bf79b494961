"""Hyperparameter search: the space, the Optuna study, several-seed trials and the results a search writes."""
