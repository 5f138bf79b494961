"""rlexp's Hydra sweeper on Optuna >= 4: `hydra/sweeper=optuna` (see rlexp's README, "Hyperparameter search").

Lives in Hydra's `hydra_plugins` namespace package (which must have no __init__.py, or it would hide
the other plugins, such as the submitit launcher).
"""
