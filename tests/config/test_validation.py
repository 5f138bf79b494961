"""Checks of a config that build nothing: ranges, unknown keys, warnings, the evaluation schedule, and
the overrides rlexp reads and writes."""

from __future__ import annotations

import pytest
from conftest import compose_cfg
from omegaconf import open_dict

from rlexp.config.overrides import as_override, whole_numbers
from rlexp.config.validation import (
    check_evaluation_count,
    check_ranges,
    config_warnings,
    did_you_mean,
    reject_unknown_keys,
)
from rlexp.errors import ConfigError
from rlexp.monitor.evaluation import eval_env_count, eval_freq, schedule_note

pytestmark = pytest.mark.unit  # pure logic in-process, no training (pytest -m unit)


@pytest.fixture(scope="module")
def ppo():
    return compose_cfg([])[0]


@pytest.mark.parametrize(
    ("key", "value", "line"),
    [
        ("seed", -1, "seed=-1: must be >= 0"),
        ("n_timesteps", 0, "n_timesteps=0: must be > 0"),
        ("algo.gamma", 1.5, "algo.gamma=1.5: must be in [0, 1]"),
        ("algo.learning_rate", float("inf"), "algo.learning_rate=inf: must be > 0"),
        ("callbacks.eval.freq", -1, "callbacks.eval.freq=-1: must be >= 0 (0: no periodic evaluation)"),
        ("callbacks.eval.n_evaluations", 10**9, "callbacks.eval.n_evaluations=1000000000: must be <= n_timesteps"),
    ],
)
def test_a_value_out_of_range_is_refused_naming_its_key(ppo, key, value, line):
    cfg = ppo.copy()
    with open_dict(cfg):
        parent, _, leaf = key.rpartition(".")
        _select(cfg, parent)[leaf] = value
    with pytest.raises(ConfigError) as err:
        check_ranges(cfg)
        check_evaluation_count(cfg.callbacks.eval, cfg.n_timesteps)
    assert str(err.value).startswith(line)


def _select(cfg, path):
    for part in filter(None, path.split(".")):
        cfg = cfg[part]
    return cfg


def test_an_unknown_key_is_refused_with_the_key_meant():
    cfg = compose_cfg(["+callbacks.eval.n_episode=3"])[0]  # (Hydra adds a + key past the schema)
    with pytest.raises(
        ConfigError, match=r"^callbacks.eval.n_episode: unknown key for EvalConfig \(did you mean n_episodes\?\)"
    ):
        reject_unknown_keys(cfg)
    assert did_you_mean("ntimesteps", ["n_timesteps", "seed"]) == " (did you mean n_timesteps?)"
    assert did_you_mean("zzz", ["n_timesteps"]) == ""


def _warnings(cfg):
    return config_warnings(
        algo=cfg.algo,
        env=cfg.env,
        n_timesteps=cfg.n_timesteps,
        trained_agent=cfg.trained_agent,
        tuned_file=cfg.tuned_file,
        tuned_env_id=cfg.tuned_env_id,
    )


def test_warnings_of_a_valid_but_suspicious_config():
    sac = compose_cfg(["algo=sac", "env=pendulum", "n_timesteps=500", "algo.learning_starts=1000"])[0]
    (warning,) = _warnings(sac)
    assert warning.startswith("algo.learning_starts=1000 >= n_timesteps=500")
    other_env = compose_cfg(["env.id=Acrobot-v1"])[0]
    assert "was tuned for CartPole-v1, not env.id=Acrobot-v1" in _warnings(other_env)[0]


def test_the_evaluation_schedule_follows_a_budget_below_its_interval(ppo):
    cfg = ppo.copy()
    cfg.n_timesteps, cfg.callbacks.eval.freq = 100_000, 10_000
    assert (
        eval_freq(cfg.callbacks.eval, cfg.n_timesteps) == 10_000 and schedule_note(cfg.callbacks.eval, 100_096) is None
    )
    cfg.n_timesteps = 3_000  # below the interval: evaluated five times instead of never
    assert eval_freq(cfg.callbacks.eval, cfg.n_timesteps) == 600
    # (the steps the run trains: n_timesteps in whole rollouts of 8 x 32 steps)
    assert eval_freq(cfg.callbacks.eval, 3_072) == 614
    assert schedule_note(cfg.callbacks.eval, 3_072) == (
        "3,072 steps are below callbacks.eval.freq=10000: evaluating every 614 steps instead (5 evaluations; "
        "callbacks.eval.freq=0 turns them off)"
    )
    cfg.callbacks.eval.freq = 0
    assert eval_freq(cfg.callbacks.eval, cfg.n_timesteps) == 0 and schedule_note(cfg.callbacks.eval, 3_072) is None
    cfg.callbacks.eval.n_evaluations = 4
    assert eval_freq(cfg.callbacks.eval, cfg.n_timesteps) == 750


def test_eval_envs_one_per_episode_at_most_sixteen(ppo):
    eval_cfg = ppo.callbacks.eval.copy()
    assert [eval_env_count(eval_cfg, n) for n in (1, 5, 100)] == [1, 5, 16]
    eval_cfg.n_envs = 4
    assert [eval_env_count(eval_cfg, n) for n in (1, 5, 100)] == [1, 4, 4]


def test_overrides_quoted_for_hydra_and_whole_floats_read_as_integers():
    assert as_override("hydra.run.dir", "runs/a b") == "hydra.run.dir='runs/a b'"
    assert as_override("seed", 3) == "seed=3" and as_override("x", "[1,2]") == "x=[1,2]"
    assert as_override("env.id", "my_pkg.envs:MyEnv") == "env.id='my_pkg.envs:MyEnv'"
    assert whole_numbers(["n_timesteps=1e6", "algo.learning_rate=1e-3", "algo.buffer_size=1e5,2e5", "seed=1.5"]) == [
        "n_timesteps=1000000",
        "algo.learning_rate=1e-3",
        "algo.buffer_size=100000,200000",
        "seed=1.5",
    ]


def test_the_tuned_line_names_the_env_id_trained():
    from omegaconf import OmegaConf

    from rlexp.config.tuned import tuned_note

    cfg = OmegaConf.create(
        {
            "tuned_file": None,
            "tuned_env_id": None,
            "tuned_source": None,
            "tuned_departures": [],
            "env": {"id": "Hopper-v5"},
        }
    )

    def note(choices):
        return tuned_note(
            choices,
            env_id=cfg.env.id,
            tuned_file=cfg.tuned_file,
            tuned_env_id=cfg.tuned_env_id,
            tuned_source=cfg.tuned_source,
            tuned_departures=cfg.tuned_departures,
        )

    assert note({"algo": "sac", "env": "cartpole", "tuned": "sac_cartpole"}).startswith(
        "no tuned values for sac on Hopper-v5: SB3 defaults"
    )
    assert note({"algo": "sac", "env": "cartpole", "tuned": None}).startswith("tuned hyperparameters: off")
    cfg.tuned_file, cfg.tuned_env_id, cfg.env.id = "sac_hopper", "Hopper-v5", "Hopper-v4"
    cfg.tuned_source = "rl-zoo3 2.9.2 sac.yml Hopper-v4"
    assert note({}) == "tuned hyperparameters: tuned/sac_hopper.yaml (rl-zoo3 2.9.2 sac.yml Hopper-v4) on Hopper-v4"
    cfg.tuned_departures = ["env.n_envs"]
    assert "rlexp departs in env.n_envs" in note({})


def test_a_tuned_file_applies_to_its_id_the_presets_aliases_and_its_family():
    from omegaconf import OmegaConf

    from rlexp.config.validation import tuned_for

    def env(env_id: str, family: str | None = None, aliases: list[str] | None = None):
        return OmegaConf.create({"id": env_id, "family": family, "aliases": aliases or []})

    assert tuned_for(env("Hopper-v5"), "Hopper-v5")
    assert tuned_for(env("Hopper-v4", "mujoco", ["Hopper-v4"]), "Hopper-v5")
    assert not tuned_for(env("Walker2d-v5", "mujoco", ["Hopper-v4"]), "Hopper-v5")
    assert tuned_for(env("ALE/Breakout-v5", "atari"), "atari")
    assert not tuned_for(env("CartPole-v1"), "atari")


def test_env_id_picks_the_preset_of_that_id():
    from rlexp.config.env_routing import routed

    assert routed(["algo=sac", "env.id=Hopper-v4"]) == (["algo=sac", "env.id=Hopper-v4", "env=hopper"], None)
    assert routed(["env.id=Hopper-v5"])[0] == ["env.id=Hopper-v5", "env=hopper"]
    overrides, line = routed(["env.id=Reacher-v2"])
    assert overrides == ["env.id=Reacher-v5", "env=reacher"] and "training Reacher-v5" in line
    assert routed(["env.id=PandaPush-v1"])[0] == ["env.id=PandaPush-v3", "env=pandapush"]
    assert routed(["env.id=BreakoutNoFrameskip-v4"])[0][-1] == "env=atari"
    assert routed(["env.id=ALE/Breakout-v5"])[0][-1] == "env=atari"
    assert routed(["env.id=MiniGrid-Empty-8x8-v0"])[0][-1] == "env=minigrid"
    assert routed(["env.id=MiniGrid-DoorKey-5x5-v0"])[0][-1] == "env=minigrid_doorkey_5x5"
    # a preset given by hand, an id rlexp has no preset for, and a sweep over ids are left as they are
    assert routed(["env=cartpole", "env.id=Hopper-v5"]) == (["env=cartpole", "env.id=Hopper-v5"], None)
    assert routed(["env.id=Taxi-v3"]) == (["env.id=Taxi-v3"], None)
    assert routed(["env.id=Hopper-v5,Walker2d-v5"]) == (["env.id=Hopper-v5,Walker2d-v5"], None)
    assert routed(["+env.id=Reacher-v4"])[0][-1] == "env=reacher"  # (every MuJoCo -v4 id is an alias)
    assert routed(["env.id=HumanoidStandup-v2"])[0] == ["env.id=HumanoidStandup-v5", "env=humanoidstandup"]
    # a user's module:Class is its own env, whatever its name looks like
    assert routed(["env.id=my_pkg:FooNoFrameskip-v4"]) == (["env.id=my_pkg:FooNoFrameskip-v4"], None)
