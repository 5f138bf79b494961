"""The run-dir contract: its readers on real files, and runs of earlier releases read as today's."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from rlexp.errors import ConfigError
from rlexp.rundir import contract

pytestmark = pytest.mark.unit  # pure logic in-process, no training (pytest -m unit)


def test_read_summary_absent_an_object_or_refused_in_one_line(tmp_path):
    assert contract.read_summary(tmp_path) is None
    (tmp_path / "summary.json").write_text("[1, 2]")
    with pytest.raises(ConfigError, match=r"summary.json: unreadable \(a JSON list, not an object\); fix it"):
        contract.read_summary(tmp_path, remedy="fix it")
    contract.write_summary(tmp_path, {"status": "completed", "when": object.__name__})
    assert contract.read_summary(tmp_path) == {"status": "completed", "when": "object"}
    assert not list(tmp_path.glob(".*tmp*"))  # written atomically: no temporary left


def test_evaluations_read_in_full_with_their_means(tmp_path):
    assert contract.read_evaluations(tmp_path) is None
    results = np.array([[1.0, 3.0], [5.0, 7.0]])
    np.savez(tmp_path / "evaluations", timesteps=[100, 200], results=results, ep_lengths=np.ones((2, 2)))
    found = contract.read_evaluations(tmp_path)
    assert found is not None and found.timesteps.tolist() == [100, 200] and found.means.tolist() == [2.0, 6.0]
    assert found.successes is None


def test_damaged_evaluations_raise_for_readers_and_are_set_aside_on_resume(tmp_path, caplog):
    (tmp_path / "evaluations.npz").write_bytes(b"PK\x03\x04 cut short")
    with pytest.raises(Exception):  # noqa: B017 (whatever numpy meets: BadZipFile, EOFError...)
        contract.read_evaluations(tmp_path)
    assert contract.read_evaluations_or_set_aside(tmp_path) is None
    assert (tmp_path / "evaluations.npz.damaged").is_file() and not (tmp_path / "evaluations.npz").exists()
    assert "start afresh" in caplog.text


def test_checkpoints_by_step_in_step_order(tmp_path):
    for step in (20_000, 3_000, 100_000):
        contract.checkpoint_dir(tmp_path, step).mkdir(parents=True)
    (tmp_path / "checkpoints" / ".step_000000005000.tmp1").mkdir()  # a save cut short: not a checkpoint
    assert contract.checkpoint_dir(tmp_path, 3000).name == "step_000000003000"
    assert list(contract.checkpoint_steps(tmp_path)) == [3_000, 20_000, 100_000]


def test_best_json_unreadable_is_none_with_a_warning(tmp_path, caplog):
    best = contract.best_record([1.0, 2.0, 3.0], step=500)
    assert best == {"mean": 2.0, "std": pytest.approx(0.8165, abs=1e-4), "episodes": 3, "step": 500}
    contract.write_best(tmp_path / "best", best)
    assert contract.read_best(tmp_path) == best
    (tmp_path / "best" / "best.json").write_text('{"mean": "high"}')
    assert contract.read_best(tmp_path) is None and "unreadable" in caplog.text


def test_a_config_of_an_earlier_release_names_todays_schedules(tmp_path):
    """Schedules moved from rlexp.run.schedules to rlexp.build.schedules, then to rlexp.builders.schedules; older config.yaml files compare
    equal to today's command and can be resumed."""
    from rlexp.config.schema import ExperimentConfig  # noqa: F401  (what read_config types with)

    config = {"lr_schedule": {"_target_": "rlexp.run.schedules.linear", "final_fraction": 0.1},
              "clip_range_schedule": {"_target_": "rlexp.build.schedules.constant"}}  # fmt: skip
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    raw = contract.read_config_dict(tmp_path)
    assert raw["lr_schedule"]["_target_"] == "rlexp.builders.schedules.linear"
    assert raw["clip_range_schedule"]["_target_"] == "rlexp.builders.schedules.constant"


def test_the_trial_record_is_json(tmp_path):
    contract.write_trial(tmp_path, {"seeds": [0, 1], "finals": [1.0, 2.0], "mean": 1.5})
    assert json.loads((tmp_path / "trial.json").read_text())["mean"] == 1.5


EARLIER_RUN = Path(__file__).parent / "earlier_release" / "run"
CONFIG_TEXTS = [
    *(p.read_text() for p in (EARLIER_RUN / "config.yaml", EARLIER_RUN / ".hydra" / "hydra.yaml")),  # real ones
    "algo:\n  _target_: stable_baselines3.PPO\n  learning_rate: 1.0e-05\n  policy_kwargs: {}\n  net: [64, 64]\n"
    "seed: 3\nn: .inf\nwhen: 2026-12-07\nnothing: null\nyes_no: [yes, no, on, off, 'yes']\ncount: 0x1f\n"
    "text: |\n  two\n  lines\nbinary: !!binary aGk=\nempty: []\ntuple_like: [[1, 2], {a: 1}]\n",
    "base: &b {x: 1, y: [1, 2]}\nother: *b\n",  # an alias: one object in PyYAML's build
    "base: &b {x: 1}\nmerged:\n  <<: *b\n  y: 2\n",  # a merge key
    "s: !!set {a, b}\no: !!omap [{a: 1}, {b: 2}]\n",
    "? [1, 2]\n: a list as a key\n",
    "a: !!python/tuple [1, 2]\n",  # a tag the safe loader refuses
    "key: 1\nkey: 2\n",
    "42\n",
    "",
    "a: [unclosed\n",
    "--- 1\n--- 2\n",
    "a: !!map x\n",
]


@pytest.mark.parametrize("text", CONFIG_TEXTS, ids=range(len(CONFIG_TEXTS)))
def test_yaml_data_is_what_pyyaml_safe_loads(text):
    """The plain build of a config (contract.yaml_data) gives PyYAML's data, or raises PyYAML's error."""
    for loader in {yaml.SafeLoader, getattr(yaml, "CSafeLoader", yaml.SafeLoader)}:
        try:
            expected = yaml.load(text, Loader=loader)
        except yaml.YAMLError as err:
            with pytest.raises(type(err)):
                contract.yaml_data(text)
            continue
        data = contract.yaml_data(text)
        assert data == expected and repr(data) == repr(expected)
