"""Learning curves: RUN/curves.png at the end of each run and `rlexp plot` over the runs of a real
multirun; the figures are read back with PIL and an XML parser, the curves' data against the files."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from conftest import FAST, rlexp_cli, stderr_lines
from PIL import Image

pytestmark = pytest.mark.xdist_group("plot_multirun")  # one multirun, on one worker
RUN = [*FAST, "curves=true", "algo=ppo", "env=cartpole", "env.n_envs=2", "algo.n_steps=32", "n_timesteps=512"]


@pytest.fixture(scope="module")
def multirun(tmp_path_factory) -> Path:
    """Two seeds of one multirun (jobs 0 and 1 under multi/)."""
    work = tmp_path_factory.mktemp("plot")
    result = rlexp_cli(["-m", *RUN, "seed=0,1", "hydra.sweep.dir=multi"], cwd=work)
    assert result.returncode == 0, result.stderr[-2000:]
    return work / "multi"


def test_a_seed_multirun_ends_with_its_report(multirun):
    report = json.loads((multirun / "report" / "report.json").read_text())  # (rlexp.run.seed_report)
    assert [(row["group"], row["n"]) for row in report["groups"]] == [("ppo", 2)]


def test_each_run_draws_its_curves(multirun):
    for job in ("0", "1"):
        with Image.open(multirun / job / "curves.png") as image:
            assert image.format == "PNG" and image.size == (1210, 462)  # 11 x 4.2 inches at 110 dpi


def test_training_episodes_end_at_the_runs_steps(multirun):
    from rlexp.figures.curves import evaluations, training_episodes

    run_dir = multirun / "0"
    summary = json.loads((run_dir / "summary.json").read_text())
    steps, returns = training_episodes(run_dir / "monitor" / "train")
    rows = [len((run_dir / "monitor" / "train" / f"{i}.monitor.csv").read_text().splitlines()) - 2 for i in (0, 1)]
    assert steps.size == returns.size == sum(rows)  # every episode of both envs
    assert (steps % 2 == 0).all() and np.all(np.diff(steps) >= 0) and steps[-1] <= summary["steps_done"]
    assert sorted(returns.tolist()) == sorted(_monitor_returns(run_dir))
    eval_steps, means, ci = evaluations(run_dir)
    with np.load(run_dir / "evaluations.npz") as data:
        assert eval_steps.tolist() == data["timesteps"].tolist()
        assert means.tolist() == pytest.approx(data["results"].mean(axis=1).tolist())
    assert np.isnan(ci).all()  # one episode per evaluation (FAST): no interval drawn


def _monitor_returns(run_dir: Path) -> list[float]:
    out = []
    for path in sorted((run_dir / "monitor" / "train").glob("*.monitor.csv")):
        out += [float(line.split(",")[0]) for line in path.read_text().splitlines()[2:]]
    return out


def test_plot_draws_the_runs_of_a_multirun_on_one_figure(multirun):
    from rlexp.figures.curves import run_labels

    aside = multirun / "0" / ".abandoned_1"  # a run set aside in a run dir is not one of the runs
    aside.mkdir(exist_ok=True)
    shutil.copy(multirun / "0" / "summary.json", aside)
    result = rlexp_cli(["plot", str(multirun), "--format", "svg"], cwd=multirun)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == f"rlexp plot: 2 runs drawn to {multirun / 'curves.svg'}"
    assert ET.parse(multirun / "curves.svg").getroot().tag.endswith("svg")
    assert run_labels([multirun / "0", multirun / "1"]) == ["seed=0", "seed=1"]  # what tells them apart
    result = rlexp_cli(["plot", str(multirun / "0"), str(multirun / "1"), "--output", "both"], cwd=multirun)
    assert result.returncode == 0, result.stderr[-2000:]
    assert (multirun / "both.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    result = rlexp_cli(["plot", str(multirun / "1"), "--output", "one.pdf"], cwd=multirun)
    assert result.returncode == 0 and (multirun / "one.pdf").read_bytes()[:5] == b"%PDF-"


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["nowhere"], "rlexp plot: error: nowhere: no such directory"),
        (["empty"], "rlexp plot: error: empty: holds no run (no summary.json in it or under it)"),
        (
            ["multi/0", "--output", "x.jpg"],
            "rlexp plot: error: --output x.jpg: unknown format '.jpg'; choose one of png, pdf, svg",
        ),
        (["multi", "multi/1"], "rlexp plot: error: a run is given twice: multi/1"),
        (
            ["multi/0", "--format", "jpg"],
            "rlexp plot: error: argument --format: invalid choice: 'jpg'",
        ),
    ],
)
def test_plot_bad_input_is_one_line(args, expected, multirun):
    (multirun.parent / "empty").mkdir(exist_ok=True)
    result = rlexp_cli(["plot", *args], cwd=multirun.parent)
    (line,) = stderr_lines(result)
    assert result.returncode == 1 and line.startswith(expected)  # (argparse quotes its choices or not)


def test_plot_draws_what_it_can_read(multirun, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(multirun / "1", run)
    monitor = run / "monitor" / "train" / "0.monitor.csv"
    good = monitor.read_text()
    monitor.write_text(good + "12.0,")  # a row cut short
    result = rlexp_cli(["plot", str(run)], cwd=tmp_path)
    assert result.returncode == 0 and "monitor files unreadable" in result.stderr, result.stderr[-2000:]
    monitor.write_text(good)
    (run / "evaluations.npz").write_bytes(b"")  # killed as it was written
    result = rlexp_cli(["plot", str(run)], cwd=tmp_path)
    assert result.returncode == 0 and "evaluations.npz unreadable" in result.stderr, result.stderr[-2000:]
    (run / "monitor" / "train").rename(run / "elsewhere")
    result = rlexp_cli(["plot", str(run)], cwd=tmp_path)
    assert result.returncode == 1 and stderr_lines(result)[-1] == f"rlexp plot: error: no episode to draw yet: {run}"
