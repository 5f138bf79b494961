"""What holds at any scale of a lab (issue 34's fault pass): a damaged input, a killed or racing command,
a full disk each end in one line or are cleaned up, never a traceback or a misleading error."""

from __future__ import annotations

import fcntl
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import rlexp_cli, stderr_lines


def _runs(root: Path, seeds: int = 3) -> Path:
    """Run dirs with what the report reads (summary.json, config.yaml, evaluations.npz)."""
    for seed in range(seeds):
        run = root / str(seed)
        run.mkdir(parents=True)
        summary = {"status": "completed", "algo": "ppo", "env_id": "CartPole-v1", "seed": seed}
        (run / "summary.json").write_text(json.dumps({**summary, "final_eval": {"mean": 100.0 + seed}}))
        (run / "config.yaml").write_text(yaml.safe_dump({"algo": {"gamma": 0.99}, "seed": seed}))
        np.savez(run / "evaluations.npz", timesteps=np.array([100, 200]), results=np.ones((2, 3)) * seed)
    return root


def test_a_symbolic_link_loop_is_one_line_and_a_loop_under_the_runs_is_walked_past(tmp_path):
    runs = _runs(tmp_path / "runs")
    (runs / "again").symlink_to(runs)  # a link back up: walking it would never end
    (tmp_path / "self").symlink_to("self")
    for args, expected in (
        (["report", "self"], "rlexp report: error: self: a symbolic link loop"),
        (["report", "runs", "--out", "self/report"], "rlexp report: error: --out self/report: a symbolic link loop"),
        (["plot", "self"], "rlexp plot: error: self: no such directory"),
    ):
        result = rlexp_cli(args, cwd=tmp_path)
        assert result.returncode == 1 and stderr_lines(result) == [stderr_lines(result)[0]], result.stderr
        assert stderr_lines(result)[0].startswith(expected), result.stderr
    result = rlexp_cli(["report", "runs", "--reps", "100"], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "rlexp report: 3 runs in 1 group" in result.stdout


def test_what_killed_reports_left_is_removed_and_a_live_writers_dir_is_not(tmp_path):
    runs = _runs(tmp_path / "runs")
    host = socket.gethostname()
    killed = tmp_path / f".report.partial-{host}-k1lled"  # a report killed while writing: nobody holds its lock
    swapped = tmp_path / f".report.old-{host}-k1lled"  # killed between its swap and its clean-up
    live = tmp_path / f".report.partial-{host}-l1ve"  # another report, writing now: it holds the lock on its dir
    elsewhere = tmp_path / ".report.partial-otherhost-k1lled"  # another host's (its lock may not show here)
    for leftover in (killed, swapped, live, elsewhere):
        leftover.mkdir()
        (leftover / "report.md").write_text("half")
    fd = os.open(live, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        result = rlexp_cli(["report", str(runs), "--out", str(tmp_path / "report"), "--reps", "100"], cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        assert not killed.exists() and not swapped.exists()
        assert (live / "report.md").read_text() == "half" and (elsewhere / "report.md").read_text() == "half"
    finally:
        os.close(fd)
    assert (tmp_path / "report" / "report.json").is_file()


@pytest.mark.slow
def test_reports_racing_for_one_dir_all_succeed_and_leave_one_whole_report(tmp_path):
    """Each writes its own hidden sibling; the swaps take turns (the last one's report stays)."""
    runs = _runs(tmp_path / "runs")
    command = [sys.executable, "-m", "rlexp", "report", str(runs), "--out", str(tmp_path / "report"), "--reps", "100"]
    for _ in range(2):
        racing = [subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)]
        racing += [
            subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for _ in range(3)
        ]
        said = [p.communicate(timeout=300) for p in racing]
        assert [p.returncode for p in racing] == [0] * 4, [err for _, err in said]
        assert json.loads((tmp_path / "report" / "report.json").read_text())["counts"]["used"] == 3
        assert sorted(p.name for p in tmp_path.iterdir()) == ["report", "runs"]


def test_a_full_disk_names_the_dir_being_written(small_tmpfs, tmp_path):
    runs = _runs(tmp_path / "runs")
    (small_tmpfs / "filler").write_bytes(b"\0" * (1024 * 1024 - 64 * 1024))  # 64 KiB left: not a report's figures
    result = rlexp_cli(["report", str(runs), "--out", str(small_tmpfs / "report"), "--reps", "100"], cwd=tmp_path)
    assert result.returncode == 1
    (line,) = stderr_lines(result)
    assert line.startswith(f"rlexp report: error: {small_tmpfs / 'report'}: No space left on device (errno 28)"), line
    assert sorted(p.name for p in small_tmpfs.iterdir()) == ["filler"]  # nothing half-written left


def test_a_killed_video_commands_temporaries_are_removed_once_stale(tmp_path):
    """atomic_write's temporaries (``.NAME.tmpPID.mp4``) of a dead process, unchanged for 10 minutes."""
    from rlexp.files.atomic import STALE_AFTER, remove_stale_temporaries

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    pid = int(dead.stdout)
    videos = tmp_path / "videos"
    videos.mkdir()
    stale = videos / f".ep_seed0.tmp{pid}.mp4"
    fresh = videos / f".ep_seed1.tmp{pid}.mp4"  # a writer on another host may still be writing it
    mine = videos / f".ep_seed2.tmp{os.getpid()}.mp4"  # a live process's
    kept = videos / "ep_seed3.mp4"
    for path in (stale, fresh, mine, kept):
        path.write_bytes(b"frames")
    old = time.time() - STALE_AFTER - 60
    for path in (stale, mine, kept):
        os.utime(path, (old, old))
    remove_stale_temporaries(videos)
    assert sorted(p.name for p in videos.iterdir()) == sorted(p.name for p in (fresh, mine, kept))


def test_plot_over_many_runs_draws_their_groups_and_names_each_damaged_run(tmp_path):
    """Over 100 runs a figure of each run shows nothing: each group's IQM curve with its band instead,
    the damaged runs named one line each and counted (not a traceback, not a silent gap)."""
    import matplotlib.image

    root = tmp_path / "sweep"
    for group in range(3):
        _runs(root / f"lr{group}", seeds=40)
        for run in (root / f"lr{group}").iterdir():
            config = yaml.safe_load((run / "config.yaml").read_text())
            config["algo"]["learning_rate"] = 10.0**-group
            (run / "config.yaml").write_text(yaml.safe_dump(config))
    (root / "lr0" / "0" / "summary.json").write_text('{"status": "compl')  # killed while writing
    (root / "lr1" / "0" / "evaluations.npz").write_bytes(b"PK\x03\x04 cut")
    result = rlexp_cli(["plot", "sweep", "--output", "curves.png"], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("rlexp plot: left out sweep/lr0/0: unreadable summary.json"), lines
    assert lines[1].startswith("rlexp plot: left out sweep/lr1/0: evaluations.npz unreadable"), lines
    assert lines[2] == "rlexp plot: 118 runs in 3 groups drawn to curves.png; 2 left out (not completed, or unreadable)"
    assert matplotlib.image.imread(tmp_path / "curves.png").shape[2] in (3, 4)
    report = rlexp_cli(["report", "sweep", "--reps", "200"], cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    assert [line for line in report.stdout.splitlines() if line.startswith("rlexp report: left out ")] == [
        "rlexp report: left out sweep/lr0/0: unreadable summary.json or config.yaml (unreadable)",
        "rlexp report: left out sweep/lr1/0: evaluations.npz unreadable (BadZipFile)",
    ]
