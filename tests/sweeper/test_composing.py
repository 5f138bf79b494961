"""A search's trials' configs, composed from one composition of what they share, are Hydra's own, whole."""

from __future__ import annotations

import pickle
from typing import Any

import pytest
from hydra.core.global_hydra import GlobalHydra
from hydra.errors import ConfigCompositionException
from hydra.initialize import initialize_config_module
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from rlexp.config.hydra_versions import has_whitelist, version_base
from rlexp.sweeper.composing import TrialConfigs

pytestmark = pytest.mark.unit  # pure logic in-process, no training (pytest -m unit)

SHARED = ["hparams=search", "algo=ppo", "env=cartpole", "env.n_envs=1", "n_timesteps=4096"]


def _trial(number: int, evaluation: str) -> list[str]:
    """A trial's job overrides as the sweeper writes them: the shared ones, then the trial's values."""
    return [
        *SHARED,
        f"algo.learning_rate={0.001 * (number + 1)}",
        f"callbacks.eval={evaluation}",  # (a dict merged into the config: never into an earlier trial's)
        f"seed={number}",
        f"hydra.sweep.subdir=trial_{number:04d}",
        "hydra.job.env_set.RLEXP_OPTUNA_STUDY='ppo-cartpole'",
        f"hydra.job.env_set.RLEXP_OPTUNA_TRIAL_ID={number + 1}",
    ]


class Counting:
    """Hydra's config loader, counting the configs it composes (each one Hydra's, as is)."""

    def __init__(self, loader: Any) -> None:
        self.loader, self.composed = loader, 0

    def load_sweep_config(self, master_config: DictConfig, overrides: list[str]) -> DictConfig:
        self.composed += 1
        return self.loader.load_sweep_config(master_config, overrides)

    def get_sources(self) -> Any:
        return self.loader.get_sources()


@pytest.fixture
def hydra_loader() -> Any:
    with initialize_config_module(config_module="rlexp.conf", **version_base()):
        yield GlobalHydra.instance().config_loader()


def _sweep(loader: Any) -> DictConfig:
    return loader.load_configuration(
        "config", overrides=["hparams=search", "hydra.sweep.dir=sweep"], run_mode=RunMode.MULTIRUN
    )


def _plain(config: DictConfig) -> Any:
    return OmegaConf.to_container(config, resolve=False)


def test_each_trials_config_is_hydras_own_composition_and_hydra_composes_the_shared_part_once(hydra_loader):
    sweep, hydra = _sweep(hydra_loader), Counting(hydra_loader)
    trials = TrialConfigs(hydra)  # type: ignore[arg-type]
    evaluations = ["{n_episodes: 3, deterministic: false}", "{n_episodes: 4}", "{final_episodes: 6}"]
    for number, evaluation in enumerate(evaluations):
        config = trials.load_sweep_config(sweep, _trial(number, evaluation))
        assert _plain(config) == _plain(hydra_loader.load_sweep_config(sweep, _trial(number, evaluation)))
    # (nothing left from trials 0 and 1: the search's 5 episodes, deterministic)
    assert (config.callbacks.eval.n_episodes, config.callbacks.eval.deterministic) == (5, True)
    assert ",callbacks.eval={final_episodes: 6}," in config.hydra.job.override_dirname
    if has_whitelist():  # Hydra 1.4: its composition is not yet matched (the first trial differs), so Hydra
        # composes every trial, as before; the configs above are Hydra's own either way
        assert hydra.composed == 1 + len(evaluations)
    else:
        assert hydra.composed == 2  # the shared part, and the first trial whole to compare: no more


def test_a_trial_that_chooses_a_group_or_adds_a_key_is_composed_by_hydra(hydra_loader):
    sweep, hydra = _sweep(hydra_loader), Counting(hydra_loader)
    trials = TrialConfigs(hydra)  # type: ignore[arg-type]
    for last in ("schedule@lr_schedule=linear", "+algo.policy_kwargs.net_arch=[8]", "~tuned"):
        overrides = [*_trial(0, "{}"), last]
        assert _plain(trials.load_sweep_config(sweep, overrides)) == _plain(
            hydra_loader.load_sweep_config(sweep, overrides)
        )
    assert hydra.composed == 3  # (each composed by Hydra alone: no shared part of theirs)


def test_a_bad_override_fails_with_hydras_error_and_a_pickled_copy_composes_as_hydra(hydra_loader):
    sweep, trials = _sweep(hydra_loader), TrialConfigs(hydra_loader)
    trials.load_sweep_config(sweep, _trial(0, "{}"))
    with pytest.raises(ConfigCompositionException, match=r"Could not override 'algo\.nope'"):
        trials.load_sweep_config(sweep, [*_trial(1, "{}"), "algo.nope=1"])
    copied = pickle.loads(pickle.dumps(trials))  # (submitit sends the launcher to each job's process)
    assert _plain(copied.load_sweep_config(sweep, _trial(2, "{}"))) == _plain(
        hydra_loader.load_sweep_config(sweep, _trial(2, "{}"))
    )
