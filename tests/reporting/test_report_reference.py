"""`rlexp report --reference`: the reference that ships for a group's tuned file joins the report as a
group of its own (statistics, curve band), and each group gets its verdict with the test that decided it.

The runs are run dirs in the real format whose config is the reference's own (PPO CartPole, 10 seeds at
100,000 steps, all 500), so that only their scores differ; one real multirun is in the slow set."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import rlexp_cli
from scipy import stats

import rlexp
from rlexp.commands import run_verb
from rlexp.references import files as reference_module
from rlexp.references.files import load_reference

REFERENCE = load_reference("ppo_cartpole")


def _run(path: Path, seed: int, final: float, steps: int = 100_000, **changes) -> None:
    """A completed run dir as training writes it (summary.json, config.yaml, evaluations.npz), of the
    reference's config with ``changes`` (dotted keys), scoring ``final`` and evaluated every 10,000 steps."""
    assert REFERENCE is not None
    config = json.loads(json.dumps(REFERENCE.config))
    config["seed"], config["n_timesteps"] = seed, steps
    for key, value in changes.items():
        *parents, leaf = key.split("__")
        node = config
        for part in parents:
            node = node[part]
        node[leaf] = value
    path.mkdir(parents=True)
    summary = {"status": "completed", "algo": "ppo", "env_id": "CartPole-v1", "seed": seed, "steps_done": steps,
               "final_eval": {"mean": final}}  # fmt: skip
    (path / "summary.json").write_text(json.dumps(summary))
    (path / "config.yaml").write_text(yaml.safe_dump(config))
    evals = np.arange(10_000, steps + 1, 10_000)
    np.savez(path / "evaluations.npz", timesteps=evals, results=np.full((evals.size, 5), final))


def _report(args: list[str], capsys) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as done:  # (the command in this process: no start-up each)
        run_verb(["report", *args, "--reps", "1000"])
    out = capsys.readouterr()
    return int(done.value.code or 0), out.out, out.err


def test_groups_are_reproduced_below_or_undecided_against_the_reference(tmp_path: Path, capsys) -> None:
    """Tuned (3 seeds at 500): reproduced; learning rate 1e-7 (3 seeds far below all 10 reference seeds):
    below, by the report's Mann-Whitney U test, Holm-corrected; a single run: undecided."""
    for seed in range(3):
        _run(tmp_path / "runs" / f"tuned_{seed}", seed, 500.0)
        _run(tmp_path / "runs" / f"sabotaged_{seed}", seed, 100.0 + seed, algo__learning_rate=1e-7)
    _run(tmp_path / "runs" / "alone_0", 0, 480.0, algo__n_epochs=5)
    code, out, _ = _report([str(tmp_path / "runs"), "--reference"], capsys)
    assert code == 0
    report = json.loads((tmp_path / "runs" / "report" / "report.json").read_text())
    verdicts = {r["group"]: r for r in report["reference_verdicts"]}
    assert {g: r["verdict"] for g, r in verdicts.items()} == {
        "algo.learning_rate=0.001 algo.n_epochs=20": "reproduced",
        "algo.learning_rate=1e-07 algo.n_epochs=20": "below",
        "algo.learning_rate=0.001 algo.n_epochs=5": "undecided",
    }
    below = verdicts["algo.learning_rate=1e-07 algo.n_epochs=20"]
    # scipy's two-sided test of the 3 runs against the 10 seeds; Holm over the 2 tested verdicts
    p = stats.mannwhitneyu([100.0, 101.0, 102.0], REFERENCE.finals, alternative="two-sided").pvalue
    assert below["mann_whitney_p"] == pytest.approx(p) and below["mann_whitney_p_holm"] == pytest.approx(2 * p)
    assert below["p_run_beats_reference"] == 0 and below["n_reference"] == REFERENCE.finals.size
    assert verdicts["algo.learning_rate=0.001 algo.n_epochs=20"]["mann_whitney_p"] == pytest.approx(1.0)
    # the reference is a group of the report: its row, and its band on the curves
    assert "reference ppo_cartpole" in report["groups_order"]
    (row,) = [r for r in report["groups"] if r["group"] == "reference ppo_cartpole"]
    assert row["n"] == REFERENCE.finals.size and row["iqm"]["value"] == pytest.approx(500.0)
    band = report["curves"]["CartPole-v1"]["groups"]["reference ppo_cartpole"]
    assert band["runs"] == REFERENCE.finals.size and len(band["iqm"]) == 10
    assert band["iqm"][0] < 500 and band["low"][0] <= band["iqm"][0] <= band["high"][0]
    assert "Mann-Whitney U" in report["settings"]["reference_test"]
    assert (
        "rlexp report: algo.learning_rate=1e-07 algo.n_epochs=20 on CartPole-v1: below against the reference "
        f"ppo_cartpole (Mann-Whitney U p = {p:.3g}, Holm {2 * p:.3g} < 0.05; IQM 101.0 over 3 seeds vs 500.0 over 10)"
    ) in out.splitlines()
    md = (tmp_path / "runs" / "report" / "report.md").read_text()
    assert "## Against the reference" in md and "**below**" in md and "**reproduced**" in md
    assert (tmp_path / "runs" / "report" / "sample_efficiency.png").is_file()
    # the Python API: the same verdicts as a table
    tables = rlexp.report([tmp_path / "runs"], reference=True, reps=1000, out=tmp_path / "api")
    assert dict(zip(tables["reference_verdicts"]["group"], tables["reference_verdicts"]["verdict"], strict=True)) == {
        g: r["verdict"] for g, r in verdicts.items()
    }


def test_a_run_of_another_budget_is_compared_on_the_reference_curve(tmp_path: Path, capsys) -> None:
    """20,000 steps: --metric final has nothing to compare with (one line, nothing written), --metric
    at:20000 the reference's evaluation at that step of its curve; the groups without any reference are
    noted, not compared."""
    for seed in range(3):
        _run(tmp_path / "runs" / f"short_{seed}", seed, 20.0, steps=20_000)
    code, _, err = _report([str(tmp_path / "runs"), "--reference"], capsys)
    assert code == 1 and not (tmp_path / "runs" / "report").exists()
    (line,) = err.strip().splitlines()
    assert (
        line.startswith("rlexp report: error: --reference: nothing to compare: ")
        and (
            "trained 20,000 steps and the reference ppo_cartpole 100,000: compare them at a step both evaluated "
            "with --metric at:STEP"
        )
        in line
    ), line
    code, out, _ = _report([str(tmp_path / "runs"), "--reference", "--metric", "at:20000"], capsys)
    assert code == 0, out
    (verdict,) = json.loads((tmp_path / "runs" / "report" / "report.json").read_text())["reference_verdicts"]
    at_20000 = REFERENCE.curves[:, list(REFERENCE.curve_steps).index(20_000)]
    assert verdict["verdict"] == "below" and verdict["reference_iqm"] == pytest.approx(stats.trim_mean(at_20000, 0.25))


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ["--metric", "best"],
            "--reference with --metric best: a reference records final evaluations and learning curves",
        ),
        (["--metric", "at:5000"], "the reference ppo_cartpole evaluated from step 10,000 to 100,000, not at 5,000"),
    ],
)
def test_reference_bad_input_is_one_line_and_writes_nothing(args, expected, tmp_path: Path, capsys) -> None:
    for seed in range(2):
        _run(tmp_path / "runs" / f"r{seed}", seed, 500.0)
    code, _, err = _report([str(tmp_path / "runs"), "--reference", *args], capsys)
    assert code == 1
    (line,) = err.strip().splitlines()
    assert line.startswith("rlexp report: error: ") and expected in line, line
    assert not (tmp_path / "runs" / "report").exists()


def test_a_pair_without_a_reference_and_a_corrupt_reference_are_refused(tmp_path: Path, capsys, monkeypatch) -> None:
    for seed in range(2):
        _run(tmp_path / "runs" / f"r{seed}", seed, 500.0, tuned_file="ppo_nothing")
    code, _, err = _report([str(tmp_path / "runs"), "--reference"], capsys)
    assert code == 1 and "no reference (tuned file ppo_nothing; rlexp list shows the pairs" in err, err
    assert not (tmp_path / "runs" / "report").exists()
    # the shipped file cut in half: one line naming it, nothing written
    shipped = reference_module.reference_dir()
    copy = tmp_path / "refs"
    shutil.copytree(shipped, copy)
    text = (copy / "ppo_cartpole.json").read_text()
    (copy / "ppo_cartpole.json").write_text(text[: len(text) // 2])
    monkeypatch.setattr(reference_module, "reference_dir", lambda: copy)
    shutil.rmtree(tmp_path / "runs")
    for seed in range(2):
        _run(tmp_path / "runs" / f"r{seed}", seed, 500.0)
    code, _, err = _report([str(tmp_path / "runs"), "--reference"], capsys)
    (line,) = err.strip().splitlines()
    assert code == 1 and line.startswith(f"rlexp report: error: reference {copy / 'ppo_cartpole.json'}: unreadable")
    assert not (tmp_path / "runs" / "report").exists()


@pytest.mark.slow
def test_three_real_seeds_of_the_tuned_run_reproduce_the_reference(tmp_path: Path) -> None:
    """The issue's check: 3 seeds of `rlexp algo=ppo env=cartpole` at the tuned budget, reported with
    --reference: reproduced, with the reference's band on the curves."""
    result = rlexp_cli(["-m", "algo=ppo", "env=cartpole", "seed=0,1,2", "hydra.sweep.dir=sweep", "curves=false"],
                       tmp_path, timeout=900)  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    report = rlexp_cli(["report", "sweep", "--reference", "--out", "rep"], tmp_path)
    assert report.returncode == 0, report.stderr[-2000:]
    assert "on CartPole-v1: reproduced against the reference ppo_cartpole (Mann-Whitney U p = " in report.stdout
    found = json.loads((tmp_path / "rep" / "report.json").read_text())
    assert [r["verdict"] for r in found["reference_verdicts"]] == ["reproduced"]
    assert "reference ppo_cartpole" in found["curves"]["CartPole-v1"]["groups"]


def test_runs_at_the_budget_past_it_or_stopped_short(tmp_path: Path, capsys) -> None:
    """PPO's last rollout takes a run a little past its budget (100,096 steps of 100,000): compared at the
    budget; a run stopped early (callbacks.stop) is not at the budget: one line naming it."""
    for seed in range(2):
        _run(tmp_path / "runs" / f"r{seed}", seed, 500.0)
        summary = json.loads((tmp_path / "runs" / f"r{seed}" / "summary.json").read_text())
        summary["steps_done"] = 100_096 if seed == 0 else 60_000
        (tmp_path / "runs" / f"r{seed}" / "summary.json").write_text(json.dumps(summary))
    code, _, err = _report([str(tmp_path / "runs"), "--reference"], capsys)
    assert code == 1 and "1 of its runs stopped before the budget (callbacks.stop?)" in err, err
    shutil.rmtree(tmp_path / "runs" / "r1")
    code, out, _ = _report([str(tmp_path / "runs"), "--reference"], capsys)
    assert code == 0 and "undecided against the reference ppo_cartpole" in out, out
