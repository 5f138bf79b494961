"""Every shipped option composes, is typed, and matches the library it configures."""

from __future__ import annotations

import inspect
from importlib.resources import files

import pytest
from conftest import compose_cfg
from hydra.errors import ConfigCompositionException
from hydra.utils import get_class
from omegaconf import OmegaConf
from omegaconf.errors import ConfigKeyError, ValidationError

from rlexp.config.algorithms import ALGORITHMS

CONF = files("rlexp.conf")
ALGOS = sorted(a.name for a in ALGORITHMS)
ENVS = sorted(p.name.removesuffix(".yaml") for p in (CONF / "env").iterdir() if p.name.endswith(".yaml"))
TUNED = sorted(p.name.removesuffix(".yaml") for p in (CONF / "tuned").iterdir() if p.name.endswith(".yaml"))
# constructor arguments that the manager passes itself rather than reading from algo.*
MANAGED = {
    "self",
    "env",
    "tensorboard_log",
    "verbose",
    "seed",
    "device",
    "_init_setup_model",
    "action_noise",
    "stats_window_size",
    "rollout_buffer_class",
    "rollout_buffer_kwargs",
}


def test_registry_is_complete():
    """Each registered algorithm is an option, and each option a registered algorithm."""
    options = sorted(p.name.removesuffix(".yaml") for p in (CONF / "algo").iterdir() if p.name.endswith(".yaml"))
    assert options == ALGOS
    assert len(ENVS) >= 50  # one preset per env RL Zoo tunes (tools/zoo_envs.yaml)
    assert len(TUNED) >= 230


@pytest.mark.parametrize("algo", ALGOS)
def test_algo_schema_holds_the_library_defaults(algo):
    cfg, _ = compose_cfg([f"algo={algo}", "~tuned"])
    cls = get_class(cfg.algo._target_)
    params = inspect.signature(cls.__init__).parameters
    keys = set(cfg.algo) - {"_target_"}
    assert keys == set(params) - MANAGED, "schema and constructor disagree"
    for key in keys - {"policy", "policy_kwargs", "replay_buffer_class", "replay_buffer_kwargs"}:
        default = params[key].default
        assert cfg.algo[key] == (list(default) if isinstance(default, tuple) else default), key


def _pairs() -> list[tuple[str, str]]:
    """Each env and each algorithm once without a tuned file of its own (the tuned pairs are composed once
    each, from the zoo's env id, by tests/zoo/test_zoo_values.py): the rest of the 12 x 52 product composes
    the same presets and schemas again."""
    untuned = {(algo, env) for algo in ALGOS for env in ENVS if f"{algo}_{env}" not in TUNED}
    # (spread over the algorithms: env i with the first untuned of the algorithms from the i-th on)
    sample = set()
    for i, env in enumerate(ENVS):
        turn = ALGOS[i % len(ALGOS) :] + ALGOS[: i % len(ALGOS)]
        sample |= {next((algo, env) for algo in turn if (algo, env) in untuned)}
    sample |= {next(p for p in sorted(untuned) if p[0] == algo) for algo in ALGOS}
    return sorted(sample)


@pytest.mark.parametrize(("algo", "env"), _pairs())
def test_every_algo_and_env_composes_without_a_tuned_file(algo, env):
    """Each env and algorithm with the schema's and the preset's values alone."""
    cfg, choices = compose_cfg([f"algo={algo}", f"env={env}"])
    OmegaConf.to_container(cfg, resolve=True, throw_on_missing=True)
    assert cfg.tuned_file is None
    assert choices["algo"] == algo and choices["env"] == env
    assert cfg.n_timesteps > 0


def test_every_tuned_file_env_and_algorithm_is_composed():
    """The zoo's pairs (each composed in tests/zoo/test_zoo_values.py) reach every tuned file once; the
    sample above every env and algorithm."""
    from zoo_import import ENVS as ZOO_ENVS
    from zoo_import import zoo_pairs

    reached = [f"{algo}_{ZOO_ENVS[env_id].preset}" for algo, env_id in zoo_pairs()]
    assert sorted(reached) == sorted(TUNED)
    pairs = _pairs()
    assert {env for _, env in pairs} == set(ENVS) and {algo for algo, _ in pairs} == set(ALGOS)
    assert len(pairs) == len(set(pairs)) < len(ENVS) + len(ALGOS)


def test_tuned_values_apply_and_command_line_wins():
    cfg, _ = compose_cfg([])
    assert (cfg.tuned_file, cfg.env.n_envs, cfg.algo.n_steps, cfg.n_timesteps) == (
        "ppo_cartpole",
        8,
        32,
        100000,
    )
    assert cfg.lr_schedule._target_ == "rlexp.builders.schedules.linear"
    cfg, _ = compose_cfg(["algo.n_steps=64", "n_timesteps=5000", "env.n_envs=2"])
    assert (cfg.algo.n_steps, cfg.n_timesteps, cfg.env.n_envs) == (64, 5000, 2)


def test_tuned_can_be_turned_off():
    cfg, _ = compose_cfg(["~tuned"])
    assert cfg.tuned_file is None
    assert (cfg.algo.n_steps, cfg.env.n_envs) == (2048, 1)
    assert cfg.lr_schedule._target_ == "rlexp.builders.schedules.constant"


def test_groups_compose():
    cfg, _ = compose_cfg(["env=atari", "wrappers=time_feature", "schedule@lr_schedule=cosine", "callbacks=checkpoints"])
    assert list(cfg.env.wrappers) == ["atari", "time_feature"]
    assert cfg.lr_schedule._target_ == "rlexp.builders.schedules.CosineSchedule"
    assert cfg.callbacks.checkpoint.freq == 10000


@pytest.mark.parametrize(
    ("override", "error", "names"),
    [
        ("algo.n_steps=lots", ValidationError, "n_steps"),
        ("algo.buffer_size=1000", ConfigKeyError, "buffer_size"),  # PPO has no replay buffer
        ("env.n_envs=1.5", ValidationError, "n_envs"),
        ("env.vec_env=threads", ValidationError, "vec_env"),
        ("action_noise.kind=pink", ValidationError, "kind"),
        ("seed=zero", ValidationError, "seed"),
    ],
)
def test_bad_types_and_unknown_keys_fail_at_composition(override, error, names):
    with pytest.raises((ConfigCompositionException, error)) as info:
        compose_cfg([override])
    text = str(info.value) + str(info.value.__cause__)
    assert names in text


@pytest.mark.parametrize("override", ["algo=ppo2", "env=cartpol"])
def test_unknown_group_choice_lists_the_options(override):
    with pytest.raises(Exception, match="Available options") as info:
        compose_cfg([override])
    assert override.split("=")[1] in str(info.value)


@pytest.mark.parametrize("override", ["+algo.bogus=1", "+env.bogus=1", "+bogus=1", "+callbacks.eval.bogus=1"])
def test_keys_added_with_plus_are_refused_before_training(override):
    from rlexp.errors import ConfigError
    from rlexp.run.front_door import check

    cfg, choices = compose_cfg([override])
    with pytest.raises(ConfigError, match="bogus: unknown key"):
        check(cfg, choices, [override])


def test_tuned_values_on_another_env_id_warn():
    from rlexp.run.front_door import check

    cfg, choices = compose_cfg(["env.id=Acrobot-v1"])
    warnings = check(cfg, choices, ["env.id=Acrobot-v1"])
    assert any("tuned for CartPole-v1, not env.id=Acrobot-v1; add ~tuned" in w for w in warnings)
