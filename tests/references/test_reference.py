"""The reference verdict on synthetic references: inside, below, above, ties, a reference too small, a
run that stopped early (compared on the curve), the config keys a run changes, unreadable files."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from rlexp.errors import ConfigError
from rlexp.references.files import FORMAT, Reference, load_reference
from rlexp.references.verdict import changed_keys, verdict

pytestmark = pytest.mark.unit  # pure logic in-process, no training (pytest -m unit)


def _reference(finals: list[float], curve: list[list[float]] | None = None) -> Reference:
    curves = np.array(curve if curve is not None else [[f / 2, f] for f in finals], dtype=np.float64)
    return Reference("ppo_cartpole", "CartPole-v1", 100_000, np.array(finals, dtype=np.float64),
                     np.array([50_000, 100_000]), curves, {"algo": {"learning_rate": 0.001}})  # fmt: skip


TEN = [200.0, 210.0, 220.0, 230.0, 240.0, 250.0, 260.0, 270.0, 280.0, 290.0]


def test_a_final_inside_the_reference_seeds_is_within_with_its_rank() -> None:
    found = verdict(_reference(TEN), 235.0, 100_352, [])
    assert found is not None
    assert found["verdict"] == "within" and found["rank"] == 5 and found["of"] == 11  # 4 seeds below it
    assert found["line"].startswith("final 235.00: within the reference (10 seeds, IQM 245.0, 95% CI [")
    assert found["line"].endswith("; this run ranks 5/11)")
    assert found["ci95_iqm"][0] < 245.0 < found["ci95_iqm"][1]


def test_below_and_above_all_reference_seeds() -> None:
    low = verdict(_reference(TEN), 100.0, 100_000, ["algo.learning_rate"])
    assert low is not None
    assert low["verdict"] == "below" and low["rank"] == 1
    assert "below" not in low["line"] and "lower than all 10 reference seeds" in low["line"]
    assert low["line"].endswith("; this run changes algo.learning_rate")
    high = verdict(_reference(TEN), 300.0, 100_000, [])
    assert high is not None
    assert high["verdict"] == "above" and high["rank"] == 11 and "higher than all 10" in high["line"]


def test_ties_with_the_lowest_or_highest_seed_are_within() -> None:
    """CartPole's reference is often all 500s: a run at 500 reproduces it, one at 499 does not."""
    tied = verdict(_reference([500.0] * 10), 500.0, 100_000, [])
    assert tied is not None
    assert tied["verdict"] == "within" and (tied["rank"], tied["rank_high"]) == (1, 11)
    assert tied["line"].endswith("this run ranks 1-11/11)")
    assert (verdict(_reference([500.0] * 10), 499.0, 100_000, []) or {})["verdict"] == "below"
    assert (verdict(_reference(TEN), 200.0, 100_000, []) or {})["verdict"] == "within"


def test_a_reference_of_too_few_seeds_is_refused() -> None:
    with pytest.raises(ConfigError, match="1 seeds, too few to compare with"):
        verdict(_reference([500.0]), 500.0, 100_000, [])


def test_a_run_stopped_early_is_compared_on_the_reference_curve_at_its_step() -> None:
    found = verdict(_reference(TEN), 150.0, 60_000, [])  # the curve at 50,000: 100..145
    assert found is not None
    assert found["compared_at"] == 50_000 and found["verdict"] == "above"
    assert "(10 seeds at step 50,000 of its curve," in found["line"]
    assert verdict(_reference(TEN), 20.0, 256, []) is None  # before the reference's first evaluation


def test_changed_keys_name_what_changes_results_only() -> None:
    reference = {"seed": 0, "algo": {"learning_rate": 0.001, "n_steps": 32}, "env": {"vec_env": "auto"},
                 "logger": {"formats": ["csv"]}, "torch_threads": None}  # fmt: skip
    run = {"seed": 3, "algo": {"learning_rate": 1e-7, "n_steps": 32}, "env": {"vec_env": "lean"},
           "logger": {"formats": ["tensorboard"]}, "torch_threads": 1}  # fmt: skip
    assert changed_keys(run, reference) == ["algo.learning_rate"]
    run["env"]["vec_env"] = "envpool"  # other random streams
    assert changed_keys(run, reference) == ["algo.learning_rate", "env.vec_env"]


def test_a_reference_file_is_read_and_an_unreadable_one_refused_in_one_line(tmp_path: Path) -> None:
    seeds = {str(i): {"final": f, "curve": {"steps": [50_000, 100_000], "mean": [f / 2, f]}} for i, f in enumerate(TEN)}
    data = {"format": FORMAT, "env_id": "CartPole-v1", "n_timesteps": 100_000, "config": {}, "seeds": seeds}
    path = tmp_path / "ppo_cartpole.json"
    path.write_text(json.dumps(data))
    reference = load_reference("ppo_cartpole", path)
    assert reference is not None and reference.finals.tolist() == TEN and reference.curves.shape == (10, 2)
    assert load_reference("ppo_cartpole", tmp_path / "none.json") is None
    path.write_text(json.dumps(data)[:-20])
    with pytest.raises(ConfigError, match=r"ppo_cartpole.json: unreadable \(.*\); re-run benchmarks/reference.py"):
        load_reference("ppo_cartpole", path)
    path.write_text(json.dumps({**data, "format": 99}))
    with pytest.raises(ConfigError, match="format 99, this rlexp reads 1"):
        load_reference("ppo_cartpole", path)
