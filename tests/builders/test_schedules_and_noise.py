"""Schedules and exploration noise: pure functions of the config, checked against what SB3 computes."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest
from gymnasium import spaces
from omegaconf import OmegaConf
from stable_baselines3.common.noise import NormalActionNoise, OrnsteinUhlenbeckActionNoise

from rlexp.builders import schedules
from rlexp.builders.noise import build_action_noise
from rlexp.errors import ConfigError

pytestmark = pytest.mark.unit  # pure logic in-process, no training (pytest -m unit)


@pytest.mark.parametrize(
    ("schedule", "start", "middle", "end"),
    [
        (schedules.constant(3e-4), 3e-4, 3e-4, 3e-4),
        (schedules.linear(1.0), 1.0, 0.5, 0.0),
        (schedules.linear(1.0, final_fraction=0.1), 1.0, 0.55, 0.1),
        (schedules.CosineSchedule(1.0), 1.0, 0.5, 0.0),
        (schedules.CosineSchedule(2.0, final_fraction=0.5), 2.0, 1.5, 1.0),
        (schedules.ExponentialSchedule(1.0, decay=0.01), 1.0, 0.1, 0.01),
    ],
)
def test_a_schedule_goes_from_its_initial_to_its_final_value(schedule, start, middle, end):
    # SB3 calls a schedule with progress_remaining: 1 at the start of training, 0 at its end
    assert [schedule(1.0), schedule(0.5), schedule(0.0)] == pytest.approx([start, middle, end])


def test_cosine_falls_slowly_at_both_ends():
    cosine = schedules.CosineSchedule(1.0)
    first, last = 1.0 - cosine(0.9), cosine(0.1)
    assert first == pytest.approx(last) and first < 0.1 * (1.0 - cosine(0.5)) * 2


@pytest.mark.parametrize("decay", [0.0, -0.5, 1.5, math.nan])
def test_an_exponential_decay_outside_0_1_is_refused_in_one_line(decay):
    with pytest.raises(ConfigError, match=r"^exponential schedule: decay must be in \(0, 1\]"):
        schedules.ExponentialSchedule(1.0, decay=decay)


def test_a_schedule_pickles_as_saved_models_need():
    for schedule in (schedules.CosineSchedule(1e-3, 0.1), schedules.ExponentialSchedule(1e-3, 0.5)):
        again = pickle.loads(pickle.dumps(schedule))
        assert again(0.3) == schedule(0.3) and repr(again) == repr(schedule)


@pytest.mark.parametrize("old_module", ["rlexp.run.schedules", "rlexp.build.schedules"])
def test_a_schedule_pickled_under_its_old_module_still_loads(old_module, monkeypatch):
    """model.zip files of earlier releases name rlexp.run.schedules.CosineSchedule or
    rlexp.build.schedules.CosineSchedule (modules that no longer exist); rlexp's unpickler finds today's."""
    import sys
    import types

    from rlexp.rundir.pickles import restricted_loads

    cls = schedules.CosineSchedule
    stand_in = types.ModuleType(old_module)  # (only while pickling: pickle checks the class is found there)
    stand_in.CosineSchedule = cls  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, old_module, stand_in)
    monkeypatch.setattr(cls, "__module__", old_module)
    data = pickle.dumps(cls(1.0, 0.2))
    monkeypatch.undo()
    assert old_module.encode() in data and old_module not in sys.modules
    with pytest.raises(ModuleNotFoundError):
        pickle.loads(data)
    loaded = restricted_loads(data, "a schedule")
    assert isinstance(loaded, cls) and loaded(0.0) == pytest.approx(0.2)


def test_the_constant_target_names_the_constant_schedule():
    assert schedules.CONSTANT == "rlexp.builders.schedules.constant"
    module, name = schedules.CONSTANT.rsplit(".", 1)
    assert getattr(__import__(module, fromlist=[name]), name) is schedules.constant


def _noise(kind: str, std: float = 0.2) -> OmegaConf:
    from rlexp.config.schema import ActionNoiseConfig, NoiseKind

    return OmegaConf.structured(ActionNoiseConfig(kind=NoiseKind(kind), std=std))


def test_noise_kinds_build_sb3_noise_of_the_action_shape():
    box = spaces.Box(-1, 1, shape=(3,))
    assert build_action_noise(_noise("none"), box) is None
    normal = build_action_noise(_noise("normal", 0.3), box)
    assert isinstance(normal, NormalActionNoise) and normal().shape == (3,)
    assert np.allclose(normal._sigma, 0.3) and np.allclose(normal._mu, 0.0)
    ou = build_action_noise(_noise("ornstein_uhlenbeck"), box)
    assert isinstance(ou, OrnsteinUhlenbeckActionNoise) and ou().shape == (3,)


def test_noise_on_discrete_actions_is_refused_naming_the_key():
    with pytest.raises(ConfigError, match=r"^action_noise.kind=normal needs a continuous \(Box\) action space"):
        build_action_noise(_noise("normal"), spaces.Discrete(2))
