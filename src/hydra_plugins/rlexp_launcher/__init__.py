"""rlexp's local launcher `hydra/launcher=local_parallel` (see rlexp's README, "Parallel jobs").

A Hydra plugin must live in the `hydra_plugins` namespace package; its config schema and the job
side (how many threads a job uses) are in rlexp.cluster.cpus.
"""
