"""The algorithms rlexp trains, each one entry of ``ALGORITHMS`` holding all that rlexp knows of it: the
option that chooses it (``algo=<name>``), its schema (keys, defaults, ranges; its ``_target_`` the SB3 or
sb3-contrib class), the sbx class that trains it under ``backend=sbx`` and what sbx does otherwise, RL Zoo's
name for it, the modules of its classes that a stranger's run may name, and its search space. The schema
store, the sbx backend, the zoo's readers, the allow-list (``rundir.trust``), the config reference and the
tests read it here.

What a run does by the kind of algorithm (on- or off-policy, a replay buffer, whole episodes) it asks SB3's
classes themselves (``OffPolicyAlgorithm``, ``rollout_buffer``), so a user's own class (``algo._target_=``)
is treated as what it is, registered or not."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib.resources import files
from typing import Any

from omegaconf import MISSING, OmegaConf

from rlexp.config.plain import plain_dict
from rlexp.config.schema import (
    A2CConfig,
    AlgoConfig,
    ARSConfig,
    CrossQConfig,
    DDPGConfig,
    DQNConfig,
    PPOConfig,
    QRDQNConfig,
    RecurrentPPOConfig,
    SACConfig,
    TD3Config,
    TQCConfig,
    TRPOConfig,
)
from rlexp.errors import ConfigError


@dataclass(frozen=True)
class Algorithm:
    """One algorithm. Adding one is an entry of ``ALGORITHMS``, its schema in rlexp.config.schema and its
    ``conf/algo/<name>.yaml`` (docs/contributing.md, "Adding an algorithm")."""

    # the conf/algo option (algo=<name>); its schema is stored as algo_<name>_schema
    name: str
    # its keys, their defaults and ranges; the schema's _target_ is the class that trains it
    schema: type[AlgoConfig]
    # the modules of its classes (algorithm, policies) a run's config may name (rlexp.rundir.trust); a
    # trailing dot: the module and its submodules
    modules: tuple[str, ...]
    # RL Zoo's name of it (hyperparams/<zoo>.yml, logs/<zoo>/); None: the zoo has none
    zoo: str | None = None
    # the sbx class that trains it under backend=sbx; None: sbx has none
    sbx: str | None = None
    # sbx keeps its first learning rate: a schedule is refused, not ignored
    sbx_constant_lr: bool = False
    # what SB3 builds when policy_kwargs leaves these out, where sbx would build something else
    sbx_policy_defaults: Mapping[str, Any] = field(default_factory=dict, hash=False)
    # keys sbx takes with another meaning than SB3: key -> why, said when the key is set (not null)
    sbx_refuses: Mapping[str, str] = field(default_factory=dict, hash=False)

    @property
    def target(self) -> str:
        """The dotted name of the SB3 or sb3-contrib class that trains it (its schema's ``_target_``)."""
        return str(self.schema._target_)

    @property
    def search_space(self) -> str | None:
        """Its option of conf/search_space (what ``-m hparams=search`` searches); None: rlexp ships none."""
        shipped = (files("rlexp.conf") / "search_space" / f"{self.name}.yaml").is_file()
        return self.name if shipped else None

    def defaults(self) -> dict[str, Any]:
        """Its keys with their schema defaults, as plain data (a key without a default left out)."""
        values = plain_dict(OmegaConf.structured(self.schema), resolve=False)
        return {k: v for k, v in values.items() if v != MISSING}


# (in this order everywhere they are listed: rlexp --help, the docs' tables)
ALGORITHMS: list[Algorithm] = [
    Algorithm(
        "ppo",
        PPOConfig,
        modules=("stable_baselines3.ppo.",),
        zoo="ppo",
        sbx="sbx.PPO",
        sbx_policy_defaults={"ortho_init": True},
        sbx_refuses={
            "target_kl": "sets an adaptive learning rate in sbx instead of stopping an update early",
            "clip_range_vf": "is ignored by sbx",
        },
    ),
    Algorithm("a2c", A2CConfig, modules=("stable_baselines3.a2c.",), zoo="a2c"),
    Algorithm(
        "dqn",
        DQNConfig,
        modules=("stable_baselines3.dqn.",),
        zoo="dqn",
        sbx="sbx.DQN",
        sbx_constant_lr=True,
        sbx_policy_defaults={"net_arch": [64, 64]},
    ),
    Algorithm("sac", SACConfig, modules=("stable_baselines3.sac.",), zoo="sac", sbx="sbx.SAC"),
    Algorithm(
        "td3",
        TD3Config,
        modules=("stable_baselines3.td3.",),
        zoo="td3",
        sbx="sbx.TD3",
        sbx_constant_lr=True,
        sbx_policy_defaults={"net_arch": [400, 300]},
    ),
    Algorithm(
        "ddpg",
        DDPGConfig,
        modules=("stable_baselines3.ddpg.",),
        zoo="ddpg",
        sbx="sbx.DDPG",
        sbx_constant_lr=True,
        sbx_policy_defaults={"net_arch": [400, 300]},
    ),
    Algorithm("tqc", TQCConfig, modules=("sb3_contrib.tqc.",), zoo="tqc", sbx="sbx.TQC"),
    Algorithm("trpo", TRPOConfig, modules=("sb3_contrib.trpo.",), zoo="trpo"),
    Algorithm("qrdqn", QRDQNConfig, modules=("sb3_contrib.qrdqn.",), zoo="qrdqn"),
    Algorithm("ars", ARSConfig, modules=("sb3_contrib.ars.",), zoo="ars"),
    Algorithm("recurrent_ppo", RecurrentPPOConfig, modules=("sb3_contrib.ppo_recurrent.",), zoo="ppo_lstm"),
    Algorithm(
        "crossq", CrossQConfig, modules=("sb3_contrib.crossq.",), zoo="crossq", sbx="sbx.CrossQ", sbx_constant_lr=True
    ),
]


def register(algorithm: Algorithm) -> None:
    """Adds an algorithm defined outside rlexp (its schema's module imported before rlexp composes a config:
    its schema is stored with the others then). A name or class already registered is refused."""
    taken = [a for a in ALGORITHMS if algorithm.name == a.name or algorithm.target == a.target]
    if taken:
        raise ConfigError(f"algorithm {algorithm.name} ({algorithm.target}): {taken[0].name} is registered already")
    ALGORITHMS.append(algorithm)


def algorithm(name: str) -> Algorithm:
    """The algorithm ``algo=<name>`` chooses."""
    found = next((a for a in ALGORITHMS if a.name == name), None)
    if found is None:
        raise ConfigError(f"algo={name}: no such algorithm ({', '.join(a.name for a in ALGORITHMS)})")
    return found


def by_target(target: Any) -> Algorithm | None:
    """The algorithm whose class ``target`` names (an algo node's ``_target_``); None for a class that no entry
    is for (a user's own algorithm)."""
    return next((a for a in ALGORITHMS if a.target == target), None)


def by_zoo_name(zoo: str) -> Algorithm | None:
    """The algorithm RL Zoo calls ``zoo`` (its hyperparams file's and log folder's name); None: none of rlexp's."""
    return next((a for a in ALGORITHMS if a.zoo is not None and a.zoo == zoo), None)


def algo_defaults(target: Any) -> dict[str, Any] | None:
    """The keys of the algorithm whose class ``target`` names (an algo node's ``_target_``, which every run's
    config.yaml holds) with their schema defaults, as plain data; None for a class that no entry is for.
    ``ExperimentConfig.algo`` is untyped (any algorithm's node): rlexp.rundir.contract.read_config fills an
    older run's algo node from these."""
    found = by_target(target)
    return None if found is None else found.defaults()
