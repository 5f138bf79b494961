"""A zoo user keeps their trained agents: an RL Zoo log folder, written by rl_zoo3 2.9.2's own train.py, is
evaluated (to the numbers of the zoo's own enjoy), exported, recorded and reported by rlexp, under the
same trust rules as a stranger's rlexp run (rlexp.zoo.log_folders)."""

from __future__ import annotations

import json
import os
import pickle
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import rlexp_cli, stderr_lines
from tampered import Payload, tampered_zip

from rlexp.zoo.log_folders import find_zoo_run, read_zoo_yaml, zoo_config

ZOO_ENV = {**os.environ, "OMP_NUM_THREADS": "1"}


def _zoo(args: list[str], cwd: Path, module: str = "rl_zoo3.train") -> str:
    result = subprocess.run([sys.executable, "-m", module, *args], cwd=cwd, capture_output=True, text=True,
                            env=ZOO_ENV, timeout=600)  # fmt: skip
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    return result.stdout


@pytest.fixture(scope="module")
def zoo_logs(tmp_path_factory) -> Path:
    """logs/ of the zoo's train.py: PPO CartPole (periodic evaluations, best model, a checkpoint) and A2C
    Pendulum (VecNormalize statistics, gSDE), each a short run of the zoo's tuned values."""
    cwd = tmp_path_factory.mktemp("zoo")
    common = ["--seed", "0", "--num-threads", "1", "-f", "logs"]
    _zoo(["--algo", "ppo", "--env", "CartPole-v1", "-n", "2048", "--eval-freq", "1024", "--eval-episodes", "2",
          "--save-freq", "1024", *common], cwd)  # fmt: skip
    _zoo(["--algo", "a2c", "--env", "Pendulum-v1", "-n", "400", "--eval-freq", "-1", *common], cwd)
    return cwd / "logs"


def _enjoy_returns(logs: Path, algo: str, env_id: str, seed: int, steps: int) -> list[float]:
    out = _zoo(["--algo", algo, "--env", env_id, "-f", str(logs), "--exp-id", "1", "-n", str(steps), "--seed",
                str(seed), "--no-render", "--num-threads", "1"], logs.parent, module="rl_zoo3.enjoy")  # fmt: skip
    return [float(v) for v in re.findall(r"^Episode Reward: (\S+)$", out, re.M)]


@pytest.mark.slow
@pytest.mark.parametrize(("algo", "env_id", "steps"), [("ppo", "CartPole-v1", 2000), ("a2c", "Pendulum-v1", 600)])
def test_evaluate_gives_the_zoo_s_own_enjoy_numbers(zoo_logs: Path, algo: str, env_id: str, steps: int) -> None:
    run = zoo_logs / algo / f"{env_id}_1"
    zoo_returns = _enjoy_returns(zoo_logs, algo, env_id, seed=7, steps=steps)
    assert len(zoo_returns) >= 2
    episodes = len(zoo_returns)
    result = rlexp_cli(["evaluate", str(run), "--seed", "7", "--episodes", str(episodes)], zoo_logs.parent)
    assert result.returncode == 0, result.stderr[-2000:]
    record = json.loads((run / "eval" / f"final_seed7_n{episodes}.json").read_text())
    assert record["n_envs"] == 1 and record["deterministic"] is True
    csv_returns = [
        float(line.split(",")[1])
        for line in (run / "eval" / f"final_seed7_n{episodes}.csv").read_text().splitlines()[1:]
    ]
    # enjoy prints returns to 2 decimals
    np.testing.assert_allclose(csv_returns, zoo_returns, atol=0.0051)
    assert record["agent_step"] == json.loads(_zip_data(run / f"{env_id}.zip"))["num_timesteps"]


def _zip_data(zip_path: Path) -> str:
    import zipfile

    with zipfile.ZipFile(zip_path) as archive:
        return archive.read("data").decode()


@pytest.mark.slow
def test_export_video_agents_and_report_of_a_zoo_run(zoo_logs: Path, tmp_path: Path) -> None:
    run = zoo_logs / "ppo" / "CartPole-v1_1"
    exported = rlexp_cli(["export", str(run)], tmp_path)
    assert exported.returncode == 0, exported.stderr[-2000:]
    parity = json.loads((run / "export" / "parity.json").read_text())
    assert parity["checks"] and all(check["passed"] for check in parity["checks"].values()), parity
    video = rlexp_cli(["video", str(run), "--episodes", "1"], tmp_path)
    assert video.returncode == 0 and list((run / "videos").glob("final_seed10000_*.mp4")), video.stderr[-2000:]
    # the zoo's best model and its checkpoint are agents too, by rlexp's names and by their zips
    for agent in (["--agent", "best"], ["--agent", "step_1024"]):
        result = rlexp_cli(["evaluate", str(run), *agent, "--episodes", "2"], tmp_path)
        assert result.returncode == 0, result.stderr[-2000:]
    by_zip = rlexp_cli(["evaluate", str(run / "best_model.zip"), "--episodes", "2"], tmp_path)
    assert by_zip.returncode == 0 and "best agent" in by_zip.stdout, by_zip.stdout + by_zip.stderr
    missing = rlexp_cli(["evaluate", str(run), "--agent", "step_5"], tmp_path)
    assert missing.returncode == 1
    assert stderr_lines(missing) == [
        f"rlexp evaluate: error: --agent step_5: the RL Zoo run {run} has no such agent (it has: final, best, step_1024, step_2048)"
    ]
    # the report scores a zoo run by its last periodic evaluation (evaluations.npz), as the zoo's plots do
    report = rlexp_cli(["report", str(zoo_logs / "ppo"), "--out", str(tmp_path / "report")], tmp_path)
    assert report.returncode == 0, report.stderr[-2000:]
    rows = json.loads((tmp_path / "report" / "report.json").read_text())["runs"]
    npz = np.load(run / "evaluations.npz")
    assert [r["final_eval"] for r in rows] == [pytest.approx(float(npz["results"][-1].mean()))]
    assert rows[0]["steps_done"] == json.loads(_zip_data(run / "CartPole-v1.zip"))["num_timesteps"]
    # the Python API opens it too
    import rlexp

    opened = rlexp.load_run(run)
    model = opened.load_agent("best")
    model.predict(model.get_env().reset(), deterministic=True)
    assert opened.summary["final_eval"]["mean"] == rows[0]["final_eval"] and opened.config.env.id == "CartPole-v1"
    # a run without evaluations (--eval-freq -1) is listed with the reason it has no score
    both = rlexp_cli(["report", str(zoo_logs), "--out", str(tmp_path / "both")], tmp_path)
    assert "trained with --eval-freq -1" in (tmp_path / "both" / "report.md").read_text(), both.stdout


@pytest.mark.slow
def test_a_tampered_zoo_run_is_refused_in_one_line(zoo_logs: Path, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    run = tmp_path / "CartPole-v1_1"
    shutil.copytree(zoo_logs / "ppo" / "CartPole-v1_1", run)
    config = run / "CartPole-v1" / "config.yml"
    original = config.read_text()
    # a YAML tag that would call os.system on loading
    config.write_text(f"!!python/object/apply:os.system [touch {marker}]\n")
    result = rlexp_cli(["evaluate", str(run), "--episodes", "1"], tmp_path)
    assert result.returncode == 1 and not marker.exists()
    (line,) = stderr_lines(result)
    assert line.startswith(f"rlexp evaluate: error: {config}: unreadable as RL Zoo's YAML"), line
    # an env wrapper outside the allow-list: named, with the way to trust it
    config.write_text(original.replace("  - - n_envs", "  - - env_wrapper\n    - os.system\n  - - n_envs"))
    for verb in ("evaluate", "export", "video"):
        result = rlexp_cli([verb, str(run)], tmp_path)
        assert result.returncode == 1
        (line,) = stderr_lines(result)
        assert f"{config}: env.wrappers.system._target_ names os.system, which is not on rlexp's allow-list" in line
        assert "--trust os" in line
    # a pickle in the zoo's zip that would call os.system when SB3 loads it
    config.write_text(original)
    tampered_zip(run / "CartPole-v1.zip", "learning_rate", pickle.dumps(Payload(marker)))
    result = rlexp_cli(["evaluate", str(run), "--episodes", "1"], tmp_path)
    assert result.returncode == 1 and not marker.exists()
    (line,) = stderr_lines(result)
    assert "its pickle names posix.system, which is not on rlexp's allow-list" in line, line


def test_the_zoo_s_yaml_opens_with_its_one_python_tag_only(tmp_path: Path) -> None:
    folder = tmp_path / "logs" / "ppo" / "CartPole-v1_3"
    (folder / "CartPole-v1").mkdir(parents=True)
    ordered = "!!python/object/apply:collections.OrderedDict\n- - - {}\n    - {}\n"
    (folder / "CartPole-v1" / "args.yml").write_text(
        "!!python/object/apply:collections.OrderedDict\n- - - algo\n    - dqn\n  - - env\n    - CartPole-v1\n"
        "  - - seed\n    - 4\n  - - env_kwargs\n    - null\n"
    )
    (folder / "CartPole-v1" / "config.yml").write_text(
        ordered.format("policy_kwargs", "dict(net_arch=[64, 64], activation_fn=nn.ReLU)")
    )
    run = find_zoo_run(folder)
    assert run is not None and find_zoo_run(folder / "CartPole-v1") is None and find_zoo_run(tmp_path) is None
    assert read_zoo_yaml(folder / "CartPole-v1" / "args.yml")["seed"] == 4
    cfg = zoo_config(run)
    assert cfg.algo._target_ == "stable_baselines3.DQN" and cfg.seed == 4 and cfg.env.id == "CartPole-v1"
    assert cfg.algo.policy_kwargs.activation_fn == {"_target_": "hydra.utils.get_class", "path": "torch.nn.ReLU"}
    assert cfg.algo.learning_rate == 0.0001  # (SB3's default, the zoo's too, where its entry has none)
    (folder / "CartPole-v1" / "config.yml").write_text("!!python/object/new:os.system [echo]\n")
    with pytest.raises(Exception, match="unreadable as RL Zoo's YAML"):
        zoo_config(run)


def _zoo_folder(root: Path, name: str, args: dict, hyperparams: dict) -> Path:
    """A zoo log folder's YAML, written as the zoo writes it (an OrderedDict of pairs), and an agent's zip."""
    from collections import OrderedDict

    import yaml

    folder = root / f"{name}_1"
    (folder / name).mkdir(parents=True)
    for file, values in (("args.yml", args), ("config.yml", hyperparams)):
        (folder / name / file).write_text(yaml.dump(OrderedDict(values)))  # (the zoo's Python tag)
    (folder / f"{name}.zip").write_bytes(b"not opened before the config passes")
    return folder


def test_a_zoo_run_s_env_id_its_packages_and_the_family_s_evaluation(tmp_path: Path) -> None:
    from rlexp.zoo.saved_agents import open_agent

    atari = _zoo_folder(tmp_path, "ALE-Pong-v5", {"algo": "ppo", "env": "ALE/Pong-v5", "seed": 1},
                        {"policy": "CnnPolicy", "frame_stack": 4,
                         "env_wrapper": ["stable_baselines3.common.atari_wrappers.AtariWrapper"]})  # fmt: skip
    cfg = zoo_config(find_zoo_run(atari))
    assert cfg.env.id == "ALE/Pong-v5" and cfg.env.family == "atari" and cfg.env.frame_stack == 4
    assert cfg.env.wrappers == {"atari": {"_target_": "stable_baselines3.common.atari_wrappers.AtariWrapper"}}
    assert cfg.callbacks.eval.deterministic is False  # (the zoo plays Atari and MiniGrid stochastic)
    # --gym-packages imports a module to register the env: code the run names, refused unless trusted
    custom = _zoo_folder(tmp_path, "Grid-v0", {"algo": "dqn", "env": "Grid-v0", "gym_packages": ["evil_pkg"]}, {})
    with pytest.raises(
        Exception, match=r"env.id names evil_pkg:Grid-v0, which is not on rlexp's allow-list.*--trust evil_pkg"
    ):
        open_agent(str(custom))
    odd = _zoo_folder(tmp_path, "CartPole-v1", {"algo": "ppo", "env": "CartPole-v1", "seed": "zero"}, {})
    with pytest.raises(Exception, match="holds a value rlexp cannot read"):
        open_agent(str(odd))
    # config.yml's env_kwargs, as the zoo's enjoy builds the env (args.yml's only when the command gave some)
    kwargs = _zoo_folder(tmp_path, "Acrobot-v1", {"algo": "a2c", "env": "Acrobot-v1", "env_kwargs": None},
                         {"env_kwargs": {"render_mode": None}, "policy": "MlpPolicy"})  # fmt: skip
    assert zoo_config(find_zoo_run(kwargs)).env.kwargs == {"render_mode": None}
    # a panda-gym run gets rlexp's SeededResets as its preset has it: an evaluation of it repeats itself
    panda = _zoo_folder(
        tmp_path, "PandaReach-v3", {"algo": "tqc", "env": "PandaReach-v3"}, {"policy": "MultiInputPolicy"}
    )
    assert zoo_config(find_zoo_run(panda)).env.wrappers == {
        "seeded_resets": {"_target_": "rlexp.builders.wrappers.SeededResets"}
    }


def test_yaml_aliases_and_a_zoo_run_still_writing_its_evaluations(tmp_path: Path) -> None:
    from rlexp.zoo.log_folders import zoo_summary

    run = _zoo_folder(tmp_path, "CartPole-v1", {"algo": "ppo", "env": "CartPole-v1"}, {})
    bomb = "a: &a [x, x]\nb: &b [*a, *a]\nc: &c [*b, *b]\n"  # (each level doubles a walk of it)
    (run / "CartPole-v1" / "config.yml").write_text(bomb)
    with pytest.raises(Exception, match="an alias"):
        zoo_config(find_zoo_run(run))
    (run / "evaluations.npz").write_bytes(b"PK\x03\x04 cut short while the zoo rewrote it")
    record = zoo_summary(find_zoo_run(run))
    assert record.status.startswith("evaluations.npz unreadable") and record.final_score is None
