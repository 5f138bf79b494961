"""Training-health checks on the values SB3 logs: each threshold warns once, naming its diagnostics key;
the verdicts of the final evaluation against training and the random policy."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from omegaconf import OmegaConf

from rlexp.config.schema import DiagnosticsConfig
from rlexp.monitor.health import (
    ENTROPY,
    GAP,
    KL,
    VALUE,
    TrainingHealth,
    judge_final,
    no_better_than_random,
    say,
    train_eval_gap,
)

pytestmark = pytest.mark.unit  # pure logic in-process, no training (pytest -m unit)


def _health(target: int = 1000, **diagnostics) -> tuple[TrainingHealth, list[str]]:
    found: list[str] = []
    cfg = OmegaConf.merge(OmegaConf.structured(DiagnosticsConfig), diagnostics)
    health = TrainingHealth(cfg, target, found)
    health.num_timesteps = 0
    health._on_training_start()
    return health, found


def test_each_kind_is_said_once_per_run():
    found: list[str] = []
    say(found, KL, "first", now=False)
    say(found, KL, "second", now=False)
    assert found == [f"{KL}: first"]


def test_an_entropy_collapse_early_in_the_run_warns():
    health, found = _health(entropy_floor=0.1, early=0.25)
    health.num_timesteps = 10
    health._entropy({"train/entropy_loss": -0.69})  # the first update: what the floor is a share of
    health.num_timesteps = 200
    health._entropy({"train/entropy_loss": -0.05})  # 7% of the first, within the first quarter
    assert len(found) == 1 and found[0].startswith(ENTROPY) and "diagnostics.entropy_floor=0.1" in found[0]


def test_an_entropy_collapse_late_in_the_run_is_not_a_problem():
    health, found = _health(entropy_floor=0.1, early=0.25)
    health.num_timesteps = 10
    health._entropy({"train/entropy_loss": -0.69})
    health.num_timesteps = 900  # past the first quarter: a policy that learnt may be deterministic
    health._entropy({"train/entropy_loss": -0.01})
    assert found == []


def test_a_value_function_that_never_explains_warns_after_its_updates():
    health, found = _health(explained_variance_updates=3)
    for value in (-0.5, 0.0, -0.1):
        health._explained_variance(value)
    assert len(found) == 1 and found[0].startswith(VALUE)
    other, none = _health(explained_variance_updates=3)
    for value in (-0.5, 0.2, -0.1, -0.3):  # explained something once: never warned
        other._explained_variance(value)
    assert none == []


@pytest.mark.parametrize(("key", "value", "warned"), [("train/approx_kl", 0.5, True), ("train/approx_kl", 0.01, False),
                                                      ("train/clip_fraction", 0.9, True)])  # fmt: skip
def test_updates_too_large_for_the_trust_region_warn(key, value, warned):
    health, found = _health(max_approx_kl=0.1, max_clip_fraction=0.5, kl_updates=3)
    for _ in range(2):
        health._kl({key: value})
    assert found == []  # not yet: a spike or two is noise
    health._kl({key: value})
    assert bool(found) is warned and (not found or found[0].startswith(KL))


def test_one_spike_among_calm_updates_is_not_a_warning():
    health, found = _health(max_approx_kl=0.1, max_clip_fraction=0.5, kl_updates=3)
    for value in (0.01, 0.2, 0.2, 0.01, 0.2, 0.01, 0.2, 0.2):
        health._kl({"train/approx_kl": value})
    assert found == []


def test_a_check_turned_off_by_null_never_warns():
    health, found = _health(max_approx_kl=None, max_clip_fraction=None)
    health._kl({"train/approx_kl": 10.0, "train/clip_fraction": 1.0})
    assert found == []


def _episodes(returns):
    return [{"r": r} for r in returns]


def test_a_final_evaluation_far_below_training_warns():
    cfg = SimpleNamespace(train_eval_gap=0.5)
    found: list[str] = []
    train_eval_gap(found, cfg, _episodes([100.0] * 10), final=30.0, random=10.0)  # gap 70 > 0.5 x (100 - 10)
    assert len(found) == 1 and found[0].startswith(GAP)
    close: list[str] = []
    train_eval_gap(close, cfg, _episodes([100.0] * 10), final=80.0, random=10.0)
    few: list[str] = []
    train_eval_gap(few, cfg, _episodes([100.0] * 3), final=0.0, random=10.0)  # too few episodes to compare
    assert close == [] and few == []


def test_no_better_than_random_within_its_confidence_interval():
    baseline = {"mean": 20.0, "ci95_mean": [15.0, 25.0]}
    assert no_better_than_random({"mean": 24.0}, baseline).startswith("final eval 24.00 is no better")
    assert no_better_than_random({"mean": 26.0}, baseline) is None
    assert no_better_than_random({"mean": 0.0}, None) is None
    assert no_better_than_random({"mean": 0.0}, {"episodes": 10, "endless": 10}) is None  # none ended


def test_the_final_verdicts_follow_the_settings():
    baseline = {"mean": 20.0, "ci95_mean": [15.0, 25.0]}
    found: list[str] = []
    judge_final(
        found, SimpleNamespace(train_eval_gap=0.5, beat_random=True), _episodes([100.0] * 10), {"mean": 21.0}, baseline
    )
    assert [f.split(":", 1)[0] for f in found] == [
        GAP,
        "final eval 21.00 is no better than the random policy (20.00, 95% CI [15.00, 25.00])",
    ]
    quiet: list[str] = []  # both switched off; a baseline that is not a dict (none was run) is no baseline
    judge_final(
        quiet,
        SimpleNamespace(train_eval_gap=None, beat_random=False),
        _episodes([100.0] * 10),
        {"mean": 21.0},
        baseline,
    )
    judge_final(quiet, SimpleNamespace(train_eval_gap=None, beat_random=True), [], {"mean": 0.0}, "skipped")
    assert quiet == []
