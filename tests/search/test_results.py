"""What a search writes in its sweep dir after each trial, and what it leaves as it was."""

from __future__ import annotations

import optuna
import pytest
import yaml

from rlexp.search.results import write_results
from rlexp.search.study import RUN_DIR_ATTR

pytestmark = pytest.mark.unit  # pure logic in-process, no training (pytest -m unit)

CONFIG = {
    "seed": 0,
    "n_timesteps": 1000,
    "algo": {"_target_": "stable_baselines3.PPO", "learning_rate": 0.001},
    "env": {"id": "CartPole-v1", "n_envs": 1},
    "lr_schedule": None,
    "clip_range_schedule": None,
    "action_noise": None,
}


def _trial(study: optuna.Study, sweep, value: float) -> None:
    """A completed trial whose run dir holds its config.yaml."""
    trial = study.ask({"algo.learning_rate": optuna.distributions.FloatDistribution(1e-5, 1e-2)})
    run_dir = sweep / f"trial_{trial.number:04d}"
    run_dir.mkdir(parents=True)
    (run_dir / "config.yaml").write_text(yaml.safe_dump({**CONFIG, "seed": trial.number}))
    trial.set_user_attr(RUN_DIR_ATTR, str(run_dir))
    study.tell(trial, value)


def test_the_tuned_file_is_written_again_only_when_the_best_trial_changes(tmp_path):
    study = optuna.create_study(direction="maximize", study_name="s")
    choices = {"algo": "ppo", "env": "cartpole"}
    tuned = tmp_path / "tuned" / "ppo_cartpole_search.yaml"
    _trial(study, tmp_path, 10.0)
    write_results(study, tmp_path, choices, plots=False)
    written = tuned.stat().st_ino
    _trial(study, tmp_path, 5.0)  # not the best: the file stays as it was, the results name both trials
    results = write_results(study, tmp_path, choices, plots=False)
    assert tuned.stat().st_ino == written and results["trials"] == {"COMPLETE": 2}
    assert "trial 0, seed 0" in tuned.read_text()
    _trial(study, tmp_path, 20.0)  # the new best: written again (atomically: another file)
    write_results(study, tmp_path, choices, plots=False)
    assert tuned.stat().st_ino != written and "trial 2, seed 2" in tuned.read_text()
    tuned.unlink()  # (a file gone since is written again)
    write_results(study, tmp_path, choices, plots=False)
    assert "trial 2, seed 2" in tuned.read_text()
