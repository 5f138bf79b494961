"""A made-up algorithm registered as docs/contributing.md says a new one is added (an entry of the registry and
its schema; tests/config/test_algorithms.py writes its conf/algo YAML): PPO whose rollouts it counts. Importing
this module registers it, as rlexp's own entries are registered by importing rlexp.config.algorithms."""

from __future__ import annotations

from dataclasses import dataclass

from stable_baselines3 import PPO

from rlexp.config.algorithms import Algorithm, register
from rlexp.config.schema import POSITIVE, PPOConfig, ranged


class CountingPPO(PPO):
    """PPO with one constructor argument of its own, and a count of its updates (what shows it trained)."""

    def __init__(self, *args, updates_kept: int = 1, **kwargs) -> None:
        self.updates_kept = updates_kept
        self.updates = 0
        super().__init__(*args, **kwargs)

    def train(self) -> None:
        self.updates += 1
        super().train()


@dataclass
class CountingPPOConfig(PPOConfig):
    _target_: str = "made_up_algorithm.CountingPPO"
    updates_kept: int = ranged(1, POSITIVE)


COUNTING_PPO = Algorithm("counting_ppo", CountingPPOConfig, modules=("made_up_algorithm",))
register(COUNTING_PPO)
