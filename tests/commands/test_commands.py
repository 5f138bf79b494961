"""`rlexp evaluate`, `rlexp video` and `rlexp plot` on real runs of PPO CartPole, SAC Pendulum
(VecNormalize) and DQN, through the real command; the files they write are read back with csv/json,
imageio and PIL."""

from __future__ import annotations

import csv
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import imageio.v2 as imageio
import pytest
from conftest import lazy_runs, rlexp_cli, stderr_lines
from PIL import Image

pytestmark = pytest.mark.xdist_group("saved_runs")  # one worker trains the runs once

RUNS = {
    "ppo": ["algo=ppo", "env=cartpole", "algo.n_steps=32"],
    "sac": ["algo=sac", "env=pendulum", "env.normalize=true", "algo.learning_starts=100"],
    "dqn": ["algo=dqn", "env=cartpole", "algo.learning_starts=100"],
}
FINAL_EPISODES = 5


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Callable[[str], Path]:
    """The run of an algorithm, trained the first time a test asks for it."""
    return lazy_runs(tmp_path_factory, RUNS, ["seed=3", f"callbacks.eval.final_episodes={FINAL_EPISODES}"])


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path) as f:
        return list(csv.DictReader(f))


@pytest.mark.parametrize(
    "algo", ["ppo", pytest.param("sac", marks=pytest.mark.slow), pytest.param("dqn", marks=pytest.mark.slow)]
)
def test_evaluate_reproduces_the_runs_final_evaluation(algo, runs):
    run_dir = runs(algo)
    result = rlexp_cli(["evaluate", str(run_dir), "--episodes", str(FINAL_EPISODES), "--seed", "10003"], cwd=run_dir)
    assert result.returncode == 0, result.stderr[-2000:]
    final = json.loads((run_dir / "summary.json").read_text())["final_eval"]
    stem = f"final_seed10003_n{FINAL_EPISODES}_envs{FINAL_EPISODES}"  # envs side by side, as the run's
    record = json.loads((run_dir / "eval" / f"{stem}.json").read_text())
    assert (record["mean"], record["std"], record["episodes"]) == (final["mean"], final["std"], final["episodes"])
    assert record["n_envs"] == final["n_envs"] == FINAL_EPISODES
    assert record["ci95_mean"][0] <= record["mean"] <= record["ci95_mean"][1]
    assert record["ci95_iqm"][0] <= record["iqm"] <= record["ci95_iqm"][1]
    rows = _rows(run_dir / "eval" / f"{stem}.csv")
    assert [int(r["episode"]) for r in rows] == list(range(FINAL_EPISODES))
    assert sum(float(r["return"]) for r in rows) / FINAL_EPISODES == pytest.approx(final["mean"])
    assert "mean " in result.stdout and "95% CI [" in result.stdout


@pytest.mark.slow  # trains SAC
def test_evaluate_same_seed_same_episodes(runs):
    run_dir = runs("sac")  # VecNormalize statistics loaded, never updated: the episodes repeat exactly
    outputs = []
    for _ in range(2):
        result = rlexp_cli(["evaluate", str(run_dir), "--agent", "best", "--episodes", "3", "--seed", "7"], cwd=run_dir)
        assert result.returncode == 0, result.stderr[-2000:]
        outputs.append(_rows(run_dir / "eval" / "best_seed7_n3_envs3.csv"))
    assert outputs[0] == outputs[1]
    assert len({row["return"] for row in outputs[0]}) == 3  # three different episodes


def test_evaluate_a_run_whose_final_evaluation_used_one_env_uses_one(runs, tmp_path):
    """A run of an rlexp before batched evaluation (final_eval without n_envs) is played again on one env."""
    old = tmp_path / "old_run"
    shutil.copytree(runs("ppo"), old, ignore=shutil.ignore_patterns("eval", ".rlexp.lock"))
    summary = json.loads((old / "summary.json").read_text())
    del summary["final_eval"]["n_envs"]
    (old / "summary.json").write_text(json.dumps(summary))
    result = rlexp_cli(["evaluate", str(old), "--episodes", "4"], cwd=old)
    assert result.returncode == 0, result.stderr[-2000:]
    record = json.loads((old / "eval" / "final_seed10003_n4.json").read_text())
    assert record["n_envs"] == 1


def test_a_run_whose_config_lacks_algo_keys_added_since_reads_with_the_schemas_defaults(runs, tmp_path):
    """config.yaml of an older rlexp, without some algo.* keys: read back, they take the defaults of the
    schema its algo._target_ names (the keys it saved keep their values), and the run evaluates and reports.
    A class of the user's own (no schema of rlexp's) is read as saved."""
    import yaml

    from rlexp.config.schema import PPOConfig
    from rlexp.rundir.checksums import sha256
    from rlexp.rundir.contract import read_config

    old = tmp_path / "old_run"
    shutil.copytree(runs("ppo"), old, ignore=shutil.ignore_patterns("eval", ".rlexp.lock"))
    saved = yaml.safe_load((old / "config.yaml").read_text())
    assert saved["algo"]["_target_"] == "stable_baselines3.PPO" and saved["algo"]["n_steps"] == 32
    for key in ("target_kl", "clip_range_vf", "normalize_advantage", "n_epochs"):
        del saved["algo"][key]
    (old / "config.yaml").write_text(yaml.safe_dump(saved))
    summary = json.loads((old / "summary.json").read_text())  # (its checksum, as the older rlexp recorded it)
    summary["checksums"]["config.yaml"] = sha256(old / "config.yaml")
    (old / "summary.json").write_text(json.dumps(summary))

    algo = read_config(old).algo
    assert (algo.target_kl, algo.clip_range_vf, algo.normalize_advantage) == (None, None, True)
    assert algo.n_epochs == PPOConfig.n_epochs == 10
    assert algo.n_steps == 32 != PPOConfig.n_steps  # saved: the run's own value, not the schema's
    assert set(algo) == set(yaml.safe_load((runs("ppo") / "config.yaml").read_text())["algo"])

    # the keys an older rlexp did not write, which the run held at their defaults (n_epochs is the tuned 20)
    saved["algo"]["n_epochs"] = 20
    (old / "config.yaml").write_text(yaml.safe_dump(saved))
    summary["checksums"]["config.yaml"] = sha256(old / "config.yaml")
    (old / "summary.json").write_text(json.dumps(summary))
    result = rlexp_cli(["evaluate", str(old), "--episodes", "2"], cwd=old)
    assert result.returncode == 0, result.stderr[-2000:]
    assert (old / "eval" / "final_seed10003_n2_envs2.json").is_file()
    # with the run it was copied from: one condition, one group of two runs (the keys it lacks at their defaults)
    result = rlexp_cli(["report", str(old), str(runs("ppo")), "--out", str(tmp_path / "report")], cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    assert [row["n"] for row in report["groups"]] == [2], report["groups"]

    own = {key: value for key, value in saved["algo"].items() if key != "policy_kwargs"}
    own["_target_"] = "my_pkg.algos.MyPPO"
    (old / "config.yaml").write_text(yaml.safe_dump({**saved, "algo": own}))
    assert read_config(old).algo == own


def test_evaluate_a_checkpoint_by_its_zip_on_several_envs(runs):
    run_dir = runs("dqn")
    result = rlexp_cli(
        ["evaluate", str(run_dir / "best" / "model.zip"), "--episodes", "6", "--n-envs", "3"], cwd=run_dir
    )
    assert result.returncode == 0, result.stderr[-2000:]
    record = json.loads((run_dir / "eval" / "best_seed10003_n6_envs3.json").read_text())
    assert record["episodes"] == 6 and record["n_envs"] == 3 and record["agent"] == "best"


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ["--agent", "step_5"],
            "--agent step_5: {run}/checkpoints/step_000000000005/model.zip does not exist (this run has: final, best)",
        ),
        (["--agent", "worst"], "--agent worst: not final, best or step_<N>"),
        (["--episodes", "0"], "argument --episodes: 0 must be >= 1"),
    ],
)
def test_evaluate_bad_input_is_one_line(args, expected, runs):
    run_dir = runs("ppo")
    result = rlexp_cli(["evaluate", str(run_dir), *args], cwd=run_dir)
    assert result.returncode == 1
    assert stderr_lines(result) == ["rlexp evaluate: error: " + expected.format(run=run_dir)]
    assert not (run_dir / "eval").exists() or not list((run_dir / "eval").glob("*step_5*"))


def test_a_trial_of_several_seeds_names_its_runs_and_an_unknown_command_the_closest(tmp_path):
    for seed in ("seed_0", "seed_1"):
        (tmp_path / "trial" / seed).mkdir(parents=True)
        (tmp_path / "trial" / seed / "config.yaml").write_text("{}\n")
    result = rlexp_cli(["evaluate", "trial"], cwd=tmp_path)
    assert stderr_lines(result) == [
        "rlexp evaluate: error: trial is a trial of 2 seeds: pass one of its runs (seed_0, seed_1)"
    ]
    result = rlexp_cli(["evalute", "trial"], cwd=tmp_path)
    assert result.returncode == 1
    assert stderr_lines(result)[0].startswith("rlexp: error: unknown command 'evalute' (did you mean evaluate?)")


@pytest.mark.parametrize(
    ("algo", "fmt", "episodes"),
    [("ppo", "mp4", 2), pytest.param("sac", "gif", 1, marks=pytest.mark.slow), ("dqn", "mp4", 1)],
)
def test_video_writes_one_frame_per_step(algo, fmt, episodes, runs):
    run_dir = runs(algo)
    result = rlexp_cli(["video", str(run_dir), "--episodes", str(episodes), "--format", fmt], cwd=run_dir)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "XDG_RUNTIME_DIR" not in result.stderr  # headless, quietly
    lines = [line for line in result.stdout.splitlines() if line.startswith("rlexp: episode")]
    assert len(lines) == episodes
    for line in lines:
        steps = int(line.split(", ")[1].split()[0])
        path = Path(line.split(" -> ")[1])
        assert path.parent == run_dir / "videos" and path.suffix == f".{fmt}"
        if fmt == "mp4":
            reader = imageio.get_reader(path)
            assert reader.count_frames() == steps
        else:  # pillow merges identical frames into one longer frame: the durations add up
            with Image.open(path) as gif:
                durations = []
                for i in range(gif.n_frames):
                    gif.seek(i)
                    durations.append(gif.info["duration"])
            fps = 30 if algo == "sac" else 50
            assert sum(durations) == steps * int(1000 / fps / 10) * 10  # GIF counts in hundredths of a second
    seeds = sorted(int(p.name.split("_seed")[1].split("_")[0]) for p in (run_dir / "videos").glob(f"*.{fmt}"))
    assert seeds == [10003 + i for i in range(episodes)]


@pytest.mark.parametrize(
    "algo", ["ppo", pytest.param("sac", marks=pytest.mark.slow), pytest.param("dqn", marks=pytest.mark.slow)]
)
def test_plot_draws_a_saved_run(algo, runs):
    run_dir = runs(algo)
    result = rlexp_cli(["plot", str(run_dir)], cwd=run_dir)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == f"rlexp plot: 1 run drawn to {run_dir / 'curves.png'}"
    with Image.open(run_dir / "curves.png") as image:
        assert image.format == "PNG"
