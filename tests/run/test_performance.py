"""The tuned defaults really train: the issue's thresholds at seed 0, through the real command.

Slow (minutes each): run with `pytest -m slow`; CI runs them after the fast set.
"""

from __future__ import annotations

import json

import pytest
from conftest import rlexp_cli

THRESHOLDS = {
    ("ppo", "cartpole"): 475,
    ("sac", "pendulum"): -200,
    ("dqn", "cartpole"): 400,
}


@pytest.mark.slow
@pytest.mark.parametrize(("algo", "env"), sorted(THRESHOLDS))
def test_tuned_defaults_reach_the_threshold(algo, env, tmp_path):
    result = rlexp_cli([f"algo={algo}", f"env={env}", "seed=0", "hydra.run.dir=run"], cwd=tmp_path, timeout=1800)
    assert result.returncode == 0, result.stderr[-2000:]
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["tuned_file"] == f"{algo}_{env}"
    assert summary["final_eval"]["mean"] >= THRESHOLDS[algo, env], summary["final_eval"]
