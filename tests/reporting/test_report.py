"""`rlexp report` over a real multirun (PPO and A2C x 3 seeds): the report a seed multirun leaves in its
sweep dir and prints, every output file read back (CSV, JSON, PNG, LaTeX), the numbers against numpy and
scipy on the runs' own summary.json scores, runs that did not complete listed and left out, and bad input
refused in one line."""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import FAST, rlexp_cli, stderr_lines
from PIL import Image
from scipy import stats

pytestmark = pytest.mark.xdist_group("report_multirun")  # one multirun, on one worker
SEEDS = (0, 1, 2)
OUTPUTS = ("report.md", "groups.csv", "runs.csv", "comparisons.csv", "table.tex", "report.json")
FIGURES = ("sample_efficiency.png", "scores.png", "performance_profile.png")


@pytest.fixture(scope="module")
def multirun(tmp_path_factory) -> tuple[Path, str]:
    """rlexp -m seed=0,1,2,-1 algo=ppo,a2c: jobs 0-5 (seed s: jobs 2s and 2s + 1) under sweep/, then a job
    the front door refuses (seed=-1: must be >= 0), which ends the multirun; and what it printed."""
    work = tmp_path_factory.mktemp("report")
    args = ["-m", *FAST, "seed=0,1,2,-1", "algo=ppo,a2c", "env.n_envs=2", "algo.n_steps=32", "hydra.sweep.dir=sweep"]
    result = rlexp_cli(args, cwd=work)
    assert result.returncode == 1 and "seed=-1: must be >= 0" in result.stderr, result.stderr[-2000:]
    assert sorted(p.name for p in (work / "sweep").iterdir() if p.name.isdigit()) == [str(k) for k in range(6)]
    return work / "sweep", result.stdout


def _finals(sweep: Path) -> dict[str, list[float]]:
    """Each algorithm's final evaluation means, from the runs' summary.json."""
    finals: dict[str, list[float]] = {}
    for summary_file in sorted(sweep.glob("[0-9]*/summary.json")):
        summary = json.loads(summary_file.read_text())
        finals.setdefault(summary["algo"], []).append(summary["final_eval"]["mean"])
    return finals


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def _report(args: list[str], cwd: Path, capsys=None) -> str:
    """`rlexp report ARGS` in this process (the command's own code; no interpreter start-up per call)."""
    from rlexp.commands import run_verb

    here = Path.cwd()
    os.chdir(cwd)
    try:
        with pytest.raises(SystemExit) as done:
            run_verb(["report", *args])
    finally:
        os.chdir(here)
    err = capsys.readouterr().err if capsys is not None else ""
    assert done.value.code == 0, err
    return err


def test_seed_multirun_prints_the_aggregate_and_leaves_its_report(multirun):
    """Here through the failed job's way out (rlexp.cli); test_plot's multirun ends normally."""
    sweep, stdout = multirun
    assert "rlexp: report of the seeds in sweep/report/report.md; the multirun stopped at a failed job" in stdout
    for name in (*OUTPUTS, *FIGURES):
        assert (sweep / "report" / name).is_file(), name
    for algo, finals in _finals(sweep).items():
        line = next(line for line in stdout.splitlines() if line.startswith(f"rlexp: algo={algo} on CartPole-v1: IQM"))
        iqm = float(re.search(r"IQM (-?[\d.]+)", line).group(1))
        assert iqm == pytest.approx(stats.trim_mean(finals, 0.25), abs=0.005), line
        assert line.endswith("over 3 seeds") and "[95% CI " in line


def test_report_numbers_are_numpys_and_scipys(multirun, tmp_path):
    sweep, _ = multirun
    _report([str(sweep), "--out", str(tmp_path / "rep")], tmp_path)
    out = tmp_path / "rep"
    finals = _finals(sweep)
    groups = {row["group"]: row for row in _rows(out / "groups.csv")}
    assert set(groups) == {"algo=ppo", "algo=a2c"}
    for algo, x in finals.items():
        row, x = groups[f"algo={algo}"], np.array(x)
        assert row["env"] == "CartPole-v1" and row["n"] == "3" and row["seeds"] == "0 1 2"
        for name, value in (
            ("iqm", stats.trim_mean(x, 0.25)),
            ("mean", x.mean()),
            ("median", np.median(x)),
            ("std", x.std(ddof=1)),
        ):
            assert float(row[name]) == pytest.approx(value), name
            assert float(row[f"{name}_low"]) <= float(row[name]) + 1e-9 <= float(row[f"{name}_high"]) + 2e-9, name
    (comparison,) = _rows(out / "comparisons.csv")
    x, y = np.array(finals["ppo"]), np.array(finals["a2c"])
    assert (comparison["a"], comparison["b"]) == ("algo=ppo", "algo=a2c")
    mw = stats.mannwhitneyu(x, y, alternative="two-sided").pvalue
    assert float(comparison["mann_whitney_p"]) == pytest.approx(mw)
    assert float(comparison["mann_whitney_p_holm"]) == pytest.approx(mw)  # one comparison: Holm changes nothing
    if np.ptp(x) or np.ptp(y):
        assert float(comparison["welch_p"]) == pytest.approx(stats.ttest_ind(x, y, equal_var=False).pvalue)
    else:  # every run of both scored the same (CartPole's 500s): the t statistic is undefined, not p = 0 or 1
        assert comparison["welch_p"] == ""
    u = stats.mannwhitneyu(x, y, alternative="greater").statistic
    assert float(comparison["probability_of_improvement"]) == pytest.approx(u / 9)
    report = json.loads((out / "report.json").read_text())
    assert report["settings"]["reps"] == 50_000 and report["settings"]["method"] == "percentile"
    assert report["settings"]["rng_seed"] == 0 and report["settings"]["confidence"] == 0.95
    runs = _rows(out / "runs.csv")
    assert len(runs) == 6 and all(r["used"] == "True" for r in runs)
    assert {r["algo._target_"] for r in runs} == {"stable_baselines3.PPO", "stable_baselines3.A2C"}  # a differing key
    assert {(r["algo"], r["seed"]) for r in runs} == {(a, str(s)) for a in ("ppo", "a2c") for s in SEEDS}
    tex = (out / "table.tex").read_text()
    assert "\\toprule" in tex and "\\bottomrule" in tex and "algo=ppo &" in tex
    md = (out / "report.md").read_text()
    for figure in FIGURES:
        assert f"]({figure})" in md
        with Image.open(out / figure) as image:
            assert image.format == "PNG" and min(image.size) > 100
    assert "## CartPole-v1" in md and "| algo=ppo | 3 |" in md and "## How to read this" in md


def _set_status(run_dir: Path, **changes) -> None:
    summary = json.loads((run_dir / "summary.json").read_text())
    summary.update(changes)
    (run_dir / "summary.json").write_text(json.dumps(summary))


def test_runs_that_did_not_complete_are_listed_and_left_out(multirun, tmp_path):
    from rlexp.lifecycle import lock

    sweep = tmp_path / "sweep"
    shutil.copytree(multirun[0], sweep, ignore=shutil.ignore_patterns("report"))
    for name in ("failed", "interrupted", "running", "died"):
        shutil.copytree(sweep / "0", sweep / f"x_{name}")
    _set_status(sweep / "x_failed", status="failed", error="ValueError: nan in the loss")
    _set_status(sweep / "x_interrupted", status="interrupted")
    _set_status(sweep / "x_running", status="running")
    _set_status(sweep / "x_died", status="running")  # its lock file is there and free: its process is gone
    _set_status(sweep / "5", status="failed", error="RuntimeError: boom")  # a2c keeps 2 seeds
    lock.hold(sweep / "x_running")  # a live owner (of another process than the report's: as a run's would be)
    try:
        result = rlexp_cli(["report", str(sweep)], cwd=tmp_path)
        assert result.returncode == 0, result.stderr[-2000:]
    finally:
        lock.release(sweep / "x_running")
    runs = {Path(r["run_dir"]).name: r for r in _rows(sweep / "report" / "runs.csv")}
    assert len(runs) == 10
    assert runs["x_failed"]["left_out"] == "failed: ValueError: nan in the loss"
    assert runs["x_interrupted"]["left_out"].startswith("interrupted")
    assert runs["x_running"]["left_out"] == "still running"
    assert runs["x_died"]["left_out"] == "its process died before it finished"
    assert (runs["x_running"]["status"], runs["x_died"]["status"]) == ("running", "died")  # as every command says
    assert runs["5"]["left_out"] == "failed: RuntimeError: boom"
    assert [r["used"] for r in runs.values()].count("True") == 5
    groups = {row["group"]: row["n"] for row in _rows(sweep / "report" / "groups.csv")}
    assert groups == {"algo=ppo": "3", "algo=a2c": "2"}
    md = (sweep / "report" / "report.md").read_text()
    assert "## Left out (5)" in md and "x_running" in md and "still running" in md
    assert "unequal seeds on CartPole-v1: algo=ppo: 3, algo=a2c: 2" in md


def test_metrics_targets_and_group_by(multirun, tmp_path):
    sweep, _ = multirun
    steps = [json.loads(p.read_text())["steps_done"] for p in sweep.glob("[0-9]*/summary.json")]
    _report(
        [str(sweep), "--out", "auc", "--metric", "auc", "--group-by", "algo", "--target", "500", "--reps", "2000"],
        tmp_path,
    )
    report = json.loads((tmp_path / "auc" / "report.json").read_text())
    assert report["settings"]["metric"] == "auc" and report["settings"]["reps"] == 2000
    with np.load(sweep / "0" / "evaluations.npz") as data:
        t, r = data["timesteps"], data["results"].mean(axis=1)
    (run0,) = [r_ for r_ in report["runs"] if Path(r_["run_dir"]).name == "0"]
    curve = report["curves"]["CartPole-v1"]
    assert not curve["interpolated"]  # every run evaluated at the same steps: its own curve is the grid's
    assert run0["score"] == pytest.approx(np.trapezoid(r, t) / (t[-1] - t[0]))
    for row in report["groups"]:
        random = report["normalization"]["CartPole-v1"]["random"]
        assert row["normalized_iqm"]["value"] == pytest.approx((row["iqm"]["value"] - random) / (500 - random))
    _report([str(sweep), "--out", "early", "--metric", "at:128"], tmp_path)
    early = json.loads((tmp_path / "early" / "report.json").read_text())
    assert all(r["used"] for r in early["runs"]) and early["settings"]["metric"] == "at:128"
    beyond = max(steps) + 1_000  # no run evaluated there: each is left out, saying why, and nothing is left
    result = rlexp_cli(["report", str(sweep), "--out", "late", "--metric", f"at:{beyond}"], cwd=tmp_path)
    (line,) = stderr_lines(result)
    assert result.returncode == 1 and "no run to report on" in line and f"not at {beyond:,}" in line
    assert not (tmp_path / "late").exists()


def test_several_envs_are_tasks_and_aggregate_with_targets(multirun, tmp_path):
    """The PPO runs copied as if on a second env: each env has its own rows, and with a target for each
    the normalized scores aggregate over both (the stratified bootstrap proper)."""
    sweep = tmp_path / "two_envs"
    for job in ("0", "1", "2", "3", "4", "5"):
        shutil.copytree(multirun[0] / job, sweep / job)
        shutil.copytree(multirun[0] / job, sweep / f"{job}_b")
        _set_status(sweep / f"{job}_b", env_id="Other-v0")
    _report([str(sweep), "--target", "CartPole-v1=500,Other-v0=400", "--baseline", "algo=a2c"], tmp_path)
    report = json.loads((sweep / "report" / "report.json").read_text())
    assert report["counts"]["envs"] == ["CartPole-v1", "Other-v0"]
    assert {(r["group"], r["env"]) for r in report["aggregate"]} == {("algo=ppo", "all envs"), ("algo=a2c", "all envs")}
    assert {(c["a"], c["b"], c["env"]) for c in report["comparisons"]} == {
        ("algo=ppo", "algo=a2c", env) for env in ("CartPole-v1", "Other-v0", "all envs")
    }
    per_env = [c for c in report["comparisons"] if c["env"] != "all envs"]
    assert [c["mann_whitney_p_holm"] for c in per_env] == pytest.approx(
        [min(1.0, 2 * min(c["mann_whitney_p"] for c in per_env))] * 2
    )
    assert "all envs (normalized)" in report["profiles"]
    (over_envs,) = [
        r for r in _rows(sweep / "report" / "groups.csv") if r["env"] == "all envs" and r["group"] == "algo=ppo"
    ]
    assert over_envs["iqm"] == "" and float(over_envs["normalized_iqm"]) == pytest.approx(
        report["aggregate"][0]["normalized_iqm"]["value"]
    )
    assert "all envs (normalized)" in (sweep / "report" / "table.tex").read_text()


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["missing_dir"], "missing_dir: no such directory"),
        (["SWEEP", "--metric", "last"], "--metric last: choose one of final, best, curve, auc, at:STEP"),
        (["SWEEP", "--metric", "at:soon"], "--metric at:soon: at:STEP takes a step number"),
        (["SWEEP", "--group-by", "algo.learnin_rate"], "did you mean algo.learning_rate"),
        (["SWEEP", "--group-by", "env"], "--group-by env: the env is always a task of its own"),
        (["SWEEP", "--baseline", "algo=dqn"], "; groups: algo=ppo; algo=a2c"),
        (["SWEEP", "--baseline", "a2c"], "--baseline 'a2c': no such group (did you mean algo=a2c?)"),
        (["SWEEP", "--target", "high"], "--target high: 'high' is not SCORE or ENV_ID=SCORE"),
        (["SWEEP", "--target", "nan"], "--target nan: nan is not a finite score"),
        (["SWEEP", "--target", "500,CartPole-v1=400,CartPole-v1=450"], "CartPole-v1 is given two targets"),
        (["SWEEP", "--target", "Cartpole-v1=500"], "--target: no run on Cartpole-v1 (did you mean CartPole-v1?)"),
        (["SWEEP", "--group-by", "seed"], "--group-by seed: the seeds are what a group's runs differ by"),
        (["SWEEP", "--metric", "at:inf"], "--metric at:inf: the step must be a number >= 0"),
        (["SWEEP", "--ci", "95"], "95 must be between 0 and 1"),
        (["SWEEP", "--reps", "0"], "0 must be >= 1"),
    ],
)
def test_report_bad_input_is_one_line_and_writes_nothing(args, expected, multirun, tmp_path, capsys):
    from rlexp.commands import run_verb

    sweep, _ = multirun
    args = [str(sweep) if a == "SWEEP" else a for a in args]
    with pytest.raises(SystemExit) as done:  # (in this process: the command's code, without a start-up each)
        run_verb(["report", *args, "--out", str(tmp_path / "rep")])
    assert done.value.code == 1
    (line,) = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert line.startswith("rlexp report: error: ") and expected in line, line
    assert not (tmp_path / "rep").exists() and not list(tmp_path.iterdir())


def _synthetic_run(
    path: Path, env: str, seed: int, config: dict, final: float, steps: list[int], curve: list[float], algo: str = "ppo"
) -> None:
    """A run dir with what the report reads: summary.json, config.yaml, evaluations.npz."""
    import yaml

    path.mkdir(parents=True)
    summary = {"status": "completed", "algo": algo, "env_id": env, "seed": seed, "final_eval": {"mean": final}}
    (path / "summary.json").write_text(json.dumps(summary))
    (path / "config.yaml").write_text(yaml.safe_dump({**config, "seed": seed, "env": {"id": env}}))
    np.savez(path / "evaluations.npz", timesteps=np.array(steps), results=np.array(curve)[:, None])


def test_groups_are_the_config_minus_seed_and_env_specific_values(tmp_path):
    """Two learning rates x 2 seeds on 2 envs whose tuned n_steps differ by env; a run differing only in
    its logger and threads is a seed of its group. Schedules that differ are interpolated, and said so."""
    for e, env in enumerate(("A-v0", "B-v0")):
        for lr in (0.001, 0.01):
            for seed in (0, 1):
                config = {
                    "algo": {"learning_rate": lr, "n_steps": 32 * (e + 1)},
                    "logger": {"verbose": seed},
                    "torch_threads": seed,
                }
                # A: schedules that differ; B: one frequency, seed 1 evaluated longer
                steps = [100, 200, 300] if seed == 0 else ([150, 300] if env == "A-v0" else [100, 200, 300, 400])
                _synthetic_run(
                    tmp_path / "runs" / f"{env}_{lr}_{seed}",
                    env,
                    seed,
                    config,
                    10 * lr + seed,
                    steps,
                    [0.0, 1.0, 2.0, 3.0][: len(steps)],
                )
    _report([str(tmp_path / "runs"), "--metric", "auc", "--reps", "1000"], tmp_path)
    report = json.loads((tmp_path / "runs" / "report" / "report.json").read_text())
    assert sorted(report["groups_order"]) == ["algo.learning_rate=0.001", "algo.learning_rate=0.01"]
    assert [(r["group"], r["env"], r["n"]) for r in report["groups"]] == [
        (g, env, 2) for g in report["groups_order"] for env in ("A-v0", "B-v0")
    ]
    curve = report["curves"]["A-v0"]
    assert curve["interpolated"] and curve["steps"] == [150.0, 300.0]  # the span both evaluated
    assert any(
        "A-v0: the runs' evaluation schedules differ; their curves are interpolated onto 2" in n
        for n in report["notes"]
    )
    assert not report["curves"]["B-v0"]["interpolated"] and report["curves"]["B-v0"]["steps"] == [100.0, 200.0, 300.0]
    assert not any(n.startswith("B-v0: the runs' evaluation schedules differ") for n in report["notes"])
    by_dir = {Path(r["run_dir"]).name: r for r in report["runs"]}
    # A, seed 0 on the grid: 0.5, 2 (interpolated) -> mean area 1.25; seed 1: 0 -> 1 over 150..300: 0.5
    assert by_dir["A-v0_0.001_0"]["score"] == pytest.approx(1.25)
    assert by_dir["A-v0_0.001_1"]["score"] == pytest.approx(0.5)
    assert by_dir["B-v0_0.001_1"]["score"] == pytest.approx(1.0)  # its steps 100-300 only: 0, 1, 2
    assert any("several envs and no --target" in note for note in report["notes"])


def test_runs_tried_out_by_hand_get_short_group_names_and_curves_say_why_not(tmp_path, capsys):
    """A day of tries on one env: two plain runs, one continued on a longer budget (with checkpoints, which
    do not make a group), one with another learning rate. Named by every differing key, a group's name runs
    past 80 characters: each names only where it departs from the usual run, and the usual one is the
    algorithm. Their evaluations do not overlap: the report says so, not that there were none."""
    usual = {"algo": {"learning_rate": 0.001}, "n_timesteps": 1000, "trained_agent": None}
    usual["callbacks"] = {"checkpoint": {"freq": 0, "keep_last": None, "save_replay_buffer": False}}
    continued = {**usual, "n_timesteps": 50000, "trained_agent": "outputs/ppo-cartpole/2026-12-06_08-15-46-127527"}
    continued["callbacks"] = {"checkpoint": {"freq": 10000, "keep_last": 2, "save_replay_buffer": True}}
    faster = {**usual, "algo": {"learning_rate": 0.01}}
    for name, config, steps in (
        ("plain_0", usual, [10, 20]),
        ("plain_1", usual, [10, 20]),
        ("continued", continued, [100, 200]),
        ("faster", faster, [10, 20]),
    ):
        _synthetic_run(
            tmp_path / "runs" / name, "A-v0", int(name[-1]) if name[-1].isdigit() else 2, config, 1.0, steps, [0.0, 1.0]
        )
    _report([str(tmp_path / "runs")], tmp_path)
    printed = capsys.readouterr().out
    report = json.loads((tmp_path / "runs" / "report" / "report.json").read_text())
    assert sorted(report["groups_order"]) == sorted(
        [
            "ppo",
            "algo.learning_rate=0.01",
            "n_timesteps=50000 trained_agent=outputs/ppo-cartpole/2026-12-06_08-15-46-127527",
        ]
    )
    assert report["uncurved"] == {"A-v0": "its runs evaluated over steps that do not overlap (10-20, 100-200)"}
    assert "rlexp report: no sample_efficiency.png: A-v0: its runs evaluated over steps that do not overlap" in printed


def test_odd_runs_are_left_out_and_disjoint_envs_do_not_aggregate(tmp_path, capsys):
    """A NaN final evaluation (a diverged run with diagnostics=none), groups on different envs with a
    target for each (nothing to aggregate over both), and a report dir rewritten whole."""
    for algo, env in (("ppo", "A-v0"), ("a2c", "B-v0")):
        for seed in (0, 1):
            config = {"algo": {"_target_": algo}}
            _synthetic_run(
                tmp_path / "runs" / f"{algo}_{seed}", env, seed, config, 1.0 + seed, [10, 20], [0.0, 1.0], algo
            )
    _synthetic_run(
        tmp_path / "runs" / "nan", "A-v0", 2, {"algo": {"_target_": "ppo"}}, float("nan"), [10, 20], [0.0, 1.0]
    )
    out = tmp_path / "runs" / "report"
    out.mkdir()
    (out / "report.json").write_text("{}")
    (out / "stale.pdf").write_text("an earlier report's figure")
    _report([str(tmp_path / "runs"), "--target", "A-v0=10,B-v0=20", "--format", "pdf"], tmp_path, capsys)
    report = json.loads((out / "report.json").read_text())
    (nan,) = [r for r in report["runs"] if Path(r["run_dir"]).name == "nan"]
    assert nan["left_out"].startswith("its score is nan") and nan["score"] is None
    assert report["aggregate"] == [] and "all envs (normalized)" not in report["profiles"]
    assert any(n.startswith("not on every env: ") for n in report["notes"])
    assert not (out / "stale.pdf").exists() and (out / "scores.pdf").read_bytes()[:5] == b"%PDF-"
    assert not list(tmp_path.glob("runs/.report*"))  # no staging dir left behind
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "notes.txt").write_text("mine")
    from rlexp.commands import run_verb

    with pytest.raises(SystemExit) as done:  # a dir of other files is never replaced
        run_verb(["report", str(tmp_path / "runs"), "--out", str(tmp_path / "elsewhere")])
    assert done.value.code == 1 and "holds files but no report.json" in capsys.readouterr().err
    assert (tmp_path / "elsewhere" / "notes.txt").read_text() == "mine"


def test_out_never_replaces_the_working_dir_or_an_input(multirun, tmp_path, capsys):
    from rlexp.commands import run_verb

    sweep, _ = multirun
    for out in (".", str(sweep), str(sweep.parent)):
        with pytest.raises(SystemExit) as done:
            run_verb(["report", str(sweep), "--out", out])
        assert done.value.code == 1
        (line,) = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
        assert "it is replaced whole: choose a new dir" in line, line
    assert sorted(p.name for p in sweep.iterdir() if p.name.isdigit()) == [str(k) for k in range(6)]


def test_a_multirun_whose_jobs_all_fail_says_only_why(tmp_path):
    result = rlexp_cli(["-m", *FAST, "seed=-1,-2", "hydra.sweep.dir=sweep"], cwd=tmp_path)
    assert result.returncode == 1 and "seed=-1: must be >= 0" in result.stderr
    assert "report" not in result.stdout + result.stderr and not (tmp_path / "sweep" / "report").exists()


@pytest.mark.unit
def test_a_group_of_one_seed_run_again_is_not_called_seeds():
    from rlexp.reporting.make_report import over_runs
    from rlexp.stats.report_record import ALL_ENVS, GroupRow

    def row(n: int, seeds: tuple[int, ...] | None) -> GroupRow:
        return GroupRow("g", "CartPole-v1" if seeds is not None else ALL_ENVS, n, seeds, {})

    assert over_runs(row(4, (0, 1, 2, 3))) == "over 4 seeds"
    assert over_runs(row(4, (0, 0, 0, 0))) == "over 4 runs of seed 0"
    assert over_runs(row(3, (0, 0, 1))) == "over 3 runs of 2 seeds"
    assert over_runs(row(1, None)) == "over 1 seed"  # (a row of all envs: runs, not seeds, are counted)


def test_a_report_and_a_plot_load_no_training_library(multirun, tmp_path):
    """Reading runs needs numpy, scipy and matplotlib, never torch, SB3 or gymnasium (~280 MiB and seconds
    of a report over 10,000 runs): each command in a fresh interpreter, its modules listed at its end."""
    import subprocess
    import sys

    sweep, _ = multirun
    code = (
        "import atexit, sys; atexit.register(lambda: print(sorted({'torch', 'stable_baselines3', 'gymnasium'} "
        "& set(sys.modules)))); from rlexp.commands import run_verb; run_verb(sys.argv[1:])"
    )
    for args in (
        ["report", str(sweep), "--out", str(tmp_path / "r")],
        ["plot", str(sweep), "--output", str(tmp_path / "p.png")],
    ):
        done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stdout.strip().splitlines()[-1] == "[]", done.stdout[-2000:]
