"""RL Zoo's published scores (rlexp.data/zoo_benchmark.csv, from the zoo's benchmark.md by
tools/zoo_benchmark.py): the shipped csv is what the tool makes of the zoo's table at its commit, a pair's
row by the zoo's env id (or the id a preset replaces), and a real run of a tuned pair without reference
results ends with the zoo's score beside its own, in summary.json and in `rlexp report --reference`.

The zoo's git repository is read where RLEXP_ZOO_GIT points (a bare copy or a checkout's .git); without it
the csv is checked against the tool's parser of an inline table only."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import zoo_benchmark as tool
from conftest import rlexp_cli

from rlexp.references.zoo_benchmark import SOURCE_PREFIX, beside_reference, csv_path, published
from rlexp.rundir.record import ABSENT, RunRecord

ZOO_GIT = Path(os.environ.get("RLEXP_ZOO_GIT", "/work/.mirror/DLR-RM+rl-baselines3-zoo/repo"))
SNIPPET = """\
"M" stands for Million (1e6)

|  algo  |            env_id             |mean_reward|std_reward|n_timesteps|eval_timesteps|eval_episodes|
|--------|-------------------------------|----------:|---------:|-----------|-------------:|------------:|
|a2c     |Acrobot-v1                     |    -83.353|    17.213|500k       |        149979|         1778|
|her     |FetchReach-v1                  |     -1.000|     0.000|20k        |        150000|         3000|
|ppo_lstm|CartPoleNoVel-v1               |    500.000|     0.000|100k       |        150000|          300|
"""
FAST = ["callbacks.eval.final_episodes=2", "callbacks.eval.n_episodes=1", "random_baseline.episodes=0", "curves=false"]


@pytest.mark.unit
def test_the_tool_keeps_the_tables_numbers_and_names_the_algos_as_rlexp_does() -> None:
    rows, skipped = tool.parse(SNIPPET)
    assert skipped == ["her"]  # (an algo rlexp does not train)
    text = tool.csv_text(rows, "0123abc")
    first, *lines = text.splitlines()
    assert first.startswith(SOURCE_PREFIX) and "0123abc" in first and "MIT licence" in first
    assert "tools/zoo_benchmark.py" in first
    assert lines == [
        "algo,env_id,mean_reward,std_reward,n_timesteps,eval_timesteps,eval_episodes",
        "a2c,Acrobot-v1,-83.353,17.213,500k,149979,1778",
        "recurrent_ppo,CartPoleNoVel-v1,500.000,0.000,100k,150000,300",
    ]
    with pytest.raises(ValueError, match="line 5: not a number where one goes"):
        tool.parse(SNIPPET.replace("-83.353", "n/a"))
    with pytest.raises(ValueError, match="columns"):
        tool.parse(SNIPPET.replace("mean_reward", "mean"))


@pytest.mark.unit
def test_the_tool_without_a_path_prints_its_usage(capsys) -> None:
    assert tool.main([]) == 2
    assert capsys.readouterr().out.startswith("usage: tools/zoo_benchmark.py")


@pytest.mark.unit
def test_the_shipped_csv_is_the_tools_output_from_the_zoos_benchmark_at_its_commit() -> None:
    shipped = csv_path().read_text()
    commit = shipped.split(" at ", 1)[1].split(",", 1)[0]
    if not ZOO_GIT.is_dir():
        pytest.skip(f"no copy of the zoo's git repository at {ZOO_GIT} (RLEXP_ZOO_GIT)")
    table = subprocess.run(["git", f"--git-dir={ZOO_GIT}", "show", f"{commit}:benchmark.md"],
                           capture_output=True, text=True, check=True).stdout  # fmt: skip
    rows, _ = tool.parse(table)
    assert tool.csv_text(rows, commit) == shipped
    assert len(rows) > 150


@pytest.mark.unit
def test_a_pairs_row_by_the_zoos_env_id_or_the_one_its_preset_replaces() -> None:
    cartpole = published("ppo", "CartPole-v1")
    assert cartpole is not None and (cartpole.mean, cartpole.std, cartpole.eval_episodes) == (500.0, 0.0, 300)
    assert cartpole.n_timesteps == "100k" and "MIT licence" in cartpole.source
    acrobot = published("a2c", "Acrobot-v1")
    assert acrobot is not None and (acrobot.mean, acrobot.std, acrobot.eval_timesteps) == (-83.353, 17.213, 149979)
    assert published("recurrent_ppo", "CartPoleNoVel-v1") is not None  # (the zoo's ppo_lstm)
    # Hopper-v5 replaces the zoo's Hopper-v3; Hopper-v4 is built as asked (an alias): the zoo has no row
    hopper = published("ppo", "Hopper-v5", "hopper")
    assert hopper is not None and hopper.env_id == "Hopper-v3" and hopper.mean == 2410.435
    assert published("ppo", "Hopper-v5") == hopper
    assert published("ppo", "Hopper-v4") is None
    assert published("ppo", "Hopper-v5", "cartpole") is None  # (a preset that does not build it)
    # two presets build LunarLander-v3: the preset says which of the zoo's ids it replaces
    lander = published("ppo", "LunarLander-v3", "lunarlander")
    assert lander is not None and lander.env_id == "LunarLander-v2"
    assert published("ppo", "Atari-v0") is None


@pytest.mark.unit
def test_only_a_shipped_tuned_file_without_reference_results_gets_the_zoos_score() -> None:
    assert beside_reference("a2c", "Acrobot-v1", "a2c_acrobot") == published("a2c", "Acrobot-v1")
    assert beside_reference("ppo", "CartPole-v1", "ppo_cartpole") is None  # (its reference results ship)
    assert beside_reference("ppo", "CartPole-v1", "ppo_mine") is None  # (not rlexp's: not the zoo's values)
    assert beside_reference("ppo", "CartPole-v1", None) is None
    assert beside_reference("a2c", "MountainCar-v0", "a2c_acrobot") is None  # (a tuned file made for another env)


@pytest.mark.unit
def test_a_summary_json_with_or_without_the_key_reads() -> None:
    assert RunRecord.from_json({"status": "completed"}).zoo_published is ABSENT
    found = {"env_id": "Acrobot-v1", "mean": -83.353, "line": "..."}
    record = RunRecord.from_json({"status": "completed", "zoo_published": found})
    assert record.zoo_published == found and record.to_json()["zoo_published"] == found


def test_a_run_without_reference_results_ends_with_the_zoos_score_and_the_report_shows_it(tmp_path: Path) -> None:
    """A2C on Acrobot (a2c_acrobot.yaml, no reference results), 2,048 steps: its line gives both scores with
    their env ids, summary.json its key; `rlexp report --reference` the zoo's row, not compared."""
    result = rlexp_cli(["algo=a2c", "env=acrobot", "n_timesteps=2048", *FAST, "hydra.run.dir=run"], tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    found = summary["zoo_published"]
    assert {k: found[k] for k in ("algo", "env_id", "mean", "std", "eval_episodes", "n_timesteps")} == {
        "algo": "a2c", "env_id": "Acrobot-v1", "mean": -83.353, "std": 17.213, "eval_episodes": 1778,
        "n_timesteps": "500k",
    }  # fmt: skip
    assert "reference" not in summary
    final, steps = summary["final_eval"]["mean"], summary["steps_done"]
    line = (
        "rlexp: RL Zoo's published agent for a2c on Acrobot-v1 (benchmark.md, 1 seed, 500k steps): -83.35 +/- 17.21 "
        f"over 1,778 episodes; this run (Acrobot-v1, {steps:,} steps): {final:.2f}"
    )
    assert found["line"] == line.removeprefix("rlexp: ") and line in result.stdout.splitlines()
    report = rlexp_cli(["report", "run", "--reference", "--reps", "1000", "--out", "rep"], tmp_path)
    assert report.returncode == 0, report.stderr[-2000:]
    assert (
        "rlexp report: a2c on Acrobot-v1: RL Zoo's published agent for a2c on Acrobot-v1 (benchmark.md, 1 seed, "
        "500k steps): -83.35 +/- 17.21 over 1,778 episodes (no rlexp reference: shown, not compared)"
    ) in report.stdout.splitlines(), report.stdout
    made = json.loads((tmp_path / "rep" / "report.json").read_text())
    assert [(r["env_id"], r["mean"]) for r in made["zoo_published"]] == [("Acrobot-v1", -83.353)]
    assert made["reference_verdicts"] == []
    assert (tmp_path / "rep" / "report.md").read_text().count(made["zoo_published"][0]["line"]) == 1  # (its notes)


def test_a_run_with_reference_results_does_not_show_the_zoos_score(tmp_path: Path) -> None:
    result = rlexp_cli(["algo=ppo", "env=cartpole", "n_timesteps=10240", *FAST, "hydra.run.dir=run"], tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert "zoo_published" not in summary and "verdict" in summary["reference"]
    assert "RL Zoo" not in result.stdout
