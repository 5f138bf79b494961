"""rlexp's schemas in Hydra's ConfigStore, so that the YAML options of ``conf/`` extend them; the launchers'
configs and rlexp's resolver registered with them, before Hydra composes anything."""

from __future__ import annotations

import functools

from hydra.core.config_store import ConfigStore

from rlexp.config.algorithms import ALGORITHMS
from rlexp.config.hydra_versions import register_resolver
from rlexp.config.launchers import register_launcher_configs
from rlexp.config.schema import CallbacksConfig, DiagnosticsConfig, EnvConfig, ExperimentConfig, LoggerConfig, env_name


@functools.cache  # once per process: Hydra 1.4 warns when a name is stored again (1.5 refuses)
def register_configs() -> None:
    """Register the schemas in Hydra's ConfigStore so that YAML options can extend them.

    They are stored at the root (``algo/ppo.yaml`` starts with ``- /algo_ppo_schema@_here_``), not in
    the groups they type, so that ``rlexp --help`` and "Available options" list only real options.
    """
    cs = ConfigStore.instance()
    cs.store(name="experiment_schema", node=ExperimentConfig)
    for algorithm in ALGORITHMS:
        cs.store(name=f"algo_{algorithm.name}_schema", node=algorithm.schema)
    cs.store(name="env_schema", node=EnvConfig)
    cs.store(name="callbacks_schema", node=CallbacksConfig)
    cs.store(name="logger_schema", node=LoggerConfig)
    cs.store(name="diagnostics_schema", node=DiagnosticsConfig)
    register_launcher_configs()
    register_resolver("rlexp_env_name", env_name)
