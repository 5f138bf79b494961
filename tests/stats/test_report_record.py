"""report.json as one typed record: written as before (keys, order, numbers), read back whole, and read from
an earlier release's report.json, which lacks the keys added since."""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml

from rlexp.stats.aggregates import IQM, STATISTICS, Scores
from rlexp.stats.report_record import ALL_ENVS, ReportRecord

pytestmark = pytest.mark.unit  # pure logic in-process, no training (pytest -m unit)


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """A report of two groups on two envs with targets: every table of report.json has rows."""
    from rlexp.reporting.compute import Settings, compute
    from rlexp.reporting.make_report import collect
    from rlexp.reporting.metrics import parse_metric

    root = tmp_path_factory.mktemp("runs")
    rng = np.random.default_rng(0)
    for lr in (0.001, 0.01):
        for env in ("A-v0", "B-v0"):
            for seed in range(3):
                run = root / f"{lr}_{env}_{seed}"
                run.mkdir()
                final = float(rng.normal(100 * lr))
                summary = {
                    "status": "completed",
                    "algo": "ppo",
                    "env_id": env,
                    "seed": seed,
                    "random_baseline": {"mean": 0.0},
                }
                (run / "summary.json").write_text(json.dumps({**summary, "final_eval": {"mean": final}}))
                config = {"algo": {"learning_rate": lr}, "seed": seed, "env": {"id": env}}
                (run / "config.yaml").write_text(yaml.safe_dump(config))
                np.savez(run / "evaluations.npz", timesteps=np.array([10, 20]), results=np.array([[0.0], [final]]))
    settings = Settings(metric=parse_metric("final"), reps=200, band_reps=20, targets={"*": 2.0})
    return compute(*collect([root], settings.metric), settings)


def test_report_json_reads_back_as_written(report):
    text = report.to_json()
    again = ReportRecord.from_json(text)
    assert again.to_json() == text
    assert [r.env for r in again.aggregate] == [ALL_ENVS] * 2 and again.comparisons and again.profiles
    row = again.groups[0]
    assert row.estimate(IQM, Scores.RAW) == report.groups[0].estimate(IQM, Scores.RAW)
    assert row.estimate(IQM, Scores.NORMALIZED) is not None


def test_a_statistics_key_is_its_declarations(report):
    """report.json's rows hold each statistic under the key its declaration gives, in its order."""
    written = json.loads(report.to_json())
    raw = [s.key(Scores.RAW) for s in STATISTICS if Scores.RAW in s.on]
    normalized = [s.key(Scores.NORMALIZED) for s in STATISTICS if Scores.NORMALIZED in s.on]
    assert list(written["groups"][0])[4:] == raw + normalized
    over = [s.key(Scores.OVER_ENVS) for s in STATISTICS if Scores.OVER_ENVS in s.on]
    assert list(written["aggregate"][0])[3:] == over
    assert IQM.name in next(iter(written["curves"].values()))["groups"]["algo.learning_rate=0.001"]


def test_an_earlier_releases_report_json_reads(report):
    """Before --reference and RL Zoo's published scores, report.json had no reference_verdicts,
    zoo_published nor uncurved."""
    earlier = json.loads(report.to_json())
    for key in ("reference_verdicts", "zoo_published", "uncurved"):
        del earlier[key]
    read = ReportRecord.from_json(json.dumps(earlier))
    assert read.reference_verdicts == () and read.zoo_published == () and dict(read.uncurved) == {}
    assert read.groups == ReportRecord.from_json(report.to_json()).groups
