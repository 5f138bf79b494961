"""Opening a stranger's run runs none of its code: every callable its config.yaml names (``_target_``,
hydra's get_class/get_method paths, an env id's module) is checked against rlexp's allow-list before
anything is built, by every command that opens an agent and by the Python API; ``--trust PKG`` (or
RLEXP_TRUST, or ``trust=``) opens a run whose author the user trusts."""

from __future__ import annotations

import contextlib
import json
import pickle
import re
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import FAST, rlexp_cli, stderr_lines
from tampered import Payload, tampered_zip

import rlexp
from rlexp.rundir.trust import allowed, untrusted

WRAPPER = '''
import gymnasium as gym


class Identity(gym.Wrapper):
    """A user's own wrapper: harmless, but code from the run's author."""
'''


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    """A finished run with VecNormalize statistics (vecnormalize.pkl) beside its model.zip."""
    cwd = tmp_path_factory.mktemp("trained")
    result = rlexp_cli([*FAST, "env.normalize=true", "hydra.run.dir=run"], cwd)
    assert result.returncode == 0, result.stderr[-2000:]
    return cwd / "run"


@pytest.mark.parametrize("where", ["vecnormalize.pkl", "model.zip"])
def test_a_tampered_pickle_runs_nothing(where: str, run: Path, tmp_path: Path) -> None:
    """A VecNormalize pickle or a model zip entry whose unpickling calls os.system: every reading command
    and the API refuse it in one line naming it; nothing runs, nothing is written. Plain SB3 would run it."""
    stranger = _forged(run, tmp_path)
    marker = tmp_path / "PWNED"
    payload = pickle.dumps(Payload(marker))
    if where == "vecnormalize.pkl":
        (stranger / "vecnormalize.pkl").write_bytes(payload)
    else:
        tampered_zip(stranger / "model.zip", "ep_info_buffer", payload)
    for verb in (["evaluate", "--episodes", "1"], ["export"], ["video", "--episodes", "1"]):
        result = rlexp_cli([verb[0], str(stranger), *verb[1:]], tmp_path)
        assert result.returncode == 1, (verb, result.stderr[-2000:])
        (line,) = stderr_lines(result)
        assert "its pickle names posix.system, which is not on rlexp's allow-list" in line, line
        assert where in line, line
    with pytest.raises(rlexp.ConfigError, match=r"its pickle names posix\.system"):
        rlexp.load_run(stranger).load_agent()
    assert not marker.exists()
    assert not any((stranger / d).exists() for d in ("eval", "export", "videos"))
    # continuing it as a trained agent: refused before a run dir exists
    continued = rlexp_cli([*FAST, "env.normalize=true", f"trained_agent={stranger}", "hydra.run.dir=cont"], tmp_path)
    assert continued.returncode == 1 and "posix.system" in continued.stderr, continued.stderr[-2000:]
    assert not marker.exists() and not (tmp_path / "cont").exists()
    # the check is what stops it: SB3's own loading runs the payload
    from stable_baselines3.common.vec_env import VecNormalize

    with contextlib.suppress(Exception):
        if where == "vecnormalize.pkl":
            VecNormalize.load(str(stranger / "vecnormalize.pkl"), None)  # type: ignore[arg-type]
        else:
            from stable_baselines3 import PPO

            PPO.load(stranger / "model.zip")
    assert marker.exists()


def _forged(run: Path, where: Path) -> Path:
    """A copy of the run whose summary.json has no checksums: as a tamperer who rewrites them leaves it
    (or a run of an earlier release), so that what stops the code is the allow-list, not a checksum."""
    copy = where / "stranger"
    shutil.copytree(run, copy)
    summary = json.loads((copy / "summary.json").read_text())
    summary.pop("checksums", None)
    (copy / "summary.json").write_text(json.dumps(summary))
    return copy


def _tampered(run: Path, where: Path, change) -> Path:
    copy = _forged(run, where)
    config = yaml.safe_load((copy / "config.yaml").read_text())
    change(config)
    (copy / "config.yaml").write_text(yaml.safe_dump(config))
    return copy


def _wrapper(spec: dict):
    return lambda config: config["env"].__setitem__("wrappers", {"extra": spec})


TAMPERED = {
    "os.system": (
        _wrapper({"_target_": "os.system", "command": "touch PWNED"}),
        "env.wrappers.extra._target_ names os.system",
    ),
    "nested numpy.load": (
        _wrapper(
            {
                "_target_": "gymnasium.wrappers.TransformObservation",
                "func": {"_target_": "numpy.load", "file": "evil.npy", "allow_pickle": True},
            }
        ),
        "env.wrappers.extra.func._target_ names numpy.load",
    ),
    "get_method path": (
        lambda c: c["algo"]["policy_kwargs"].__setitem__(
            "activation_fn", {"_target_": "hydra.utils.get_method", "path": "os.system"}
        ),
        "algo.policy_kwargs.activation_fn.path names os.system",
    ),
    "a loader of SB3": (
        _wrapper({"_target_": "stable_baselines3.common.save_util.load_from_pkl", "path": "evil.pkl"}),
        "names stable_baselines3.common.save_util.load_from_pkl",
    ),
    "env module": (lambda c: c["env"].__setitem__("id", "evil_envs:Env-v0"), "env.id names evil_envs:Env-v0"),
    "attribute chain": (  # an allowed module's imports walked to a writer: Path.write_text
        _wrapper(
            {
                "_target_": "gymnasium.wrappers.TimeLimit",
                "max_episode_steps": {
                    "_target_": "rlexp.builders.wrappers.gym.wrappers.importlib.metadata.pathlib.Path.write_text",
                    "_args_": [
                        {
                            "_target_": "rlexp.builders.wrappers.gym.wrappers.importlib.metadata.pathlib.Path",
                            "_args_": ["PWNED"],
                        },
                        "x",
                    ],
                },
            }
        ),
        "names rlexp.builders.wrappers.gym.wrappers.importlib.metadata.pathlib.Path.write_text",
    ),
    "interpolation": (
        _wrapper("${oc.decode:'{_target_: builtins.print, _args_: [x]}'}"),
        "env.wrappers.extra holds an interpolation",
    ),
}


@pytest.mark.parametrize("case", sorted(TAMPERED))
def test_every_reading_command_refuses_code_outside_the_allow_list(case: str, run: Path, tmp_path: Path) -> None:
    change, expected = TAMPERED[case]
    stranger = _tampered(run, tmp_path, change)
    for verb in (["evaluate", "--episodes", "1"], ["export"], ["video", "--episodes", "1"]):
        result = rlexp_cli([verb[0], str(stranger), *verb[1:]], tmp_path)
        assert result.returncode == 1, (verb, result.stderr[-2000:])
        (line,) = stderr_lines(result)
        assert expected in line and ("not on rlexp's allow-list" in line or "interpolation" in line), line
    with pytest.raises(rlexp.ConfigError, match=r"not on rlexp's allow-list|holds an interpolation"):
        rlexp.load_run(stranger).load_agent()
    assert rlexp.load_run(stranger).config.seed == 0  # (reading what it names builds nothing)
    assert not (tmp_path / "PWNED").exists()
    assert (
        not (stranger / "eval").exists() and not (stranger / "export").exists() and not (stranger / "videos").exists()
    )


def test_a_trusted_package_opens_by_flag_setting_or_api(run: Path, tmp_path: Path) -> None:
    (tmp_path / "my_wrappers.py").write_text(WRAPPER)
    stranger = _tampered(run, tmp_path, _wrapper({"_target_": "my_wrappers.Identity"}))
    refused = rlexp_cli(["evaluate", str(stranger), "--episodes", "1"], tmp_path)
    assert refused.returncode == 1 and "--trust my_wrappers" in refused.stderr
    env = {"PYTHONPATH": str(tmp_path)}
    flag = rlexp_cli(["evaluate", str(stranger), "--episodes", "1", "--trust", "my_wrappers"], tmp_path, env=env)
    assert flag.returncode == 0, flag.stderr[-2000:]
    setting = rlexp_cli(
        ["evaluate", str(stranger), "--episodes", "1"], tmp_path, env={**env, "RLEXP_TRUST": "my_wrappers"}
    )
    assert setting.returncode == 0, setting.stderr[-2000:]
    import sys

    sys.path.insert(0, str(tmp_path))
    try:
        assert rlexp.load_run(stranger, trust=["my_wrappers"]).evaluate(episodes=1)["episodes"] == 1
    finally:
        sys.path.remove(str(tmp_path))


def test_the_allow_list_takes_classes_not_functions_and_every_shipped_config_passes() -> None:
    assert allowed("stable_baselines3.PPO") and allowed("torch.nn.ReLU") and allowed("sb3_contrib.TQC")
    assert allowed("gymnasium.wrappers.TimeLimit") and allowed("rlexp.builders.schedules.linear")
    assert not allowed("stable_baselines3.PPO.load") and not allowed("torch.load") and not allowed("os.system")
    assert not allowed("builtins.eval") and not allowed("rlexp.rundir.agents.load_model")
    assert allowed("my_pkg.Wrapper", {"my_pkg"}) and not allowed("my_pkgx.Wrapper", {"my_pkg"})
    conf = Path(__file__).resolve().parents[2] / "conf"
    for path in [*conf.glob("tuned/*.yaml"), *conf.glob("env/*.yaml"), *conf.glob("algo/*.yaml"),
                 *conf.glob("wrappers/*.yaml"), *conf.glob("schedule/*.yaml")]:  # fmt: skip
        # (the shipped files hold interpolations, which Hydra resolves: a run's config.yaml never does)
        assert [u for u in untrusted(yaml.safe_load(path.read_text()) or {}) if "${" not in u[1]] == [], path


def test_a_file_changed_since_the_run_is_refused_and_verify_lists_it(run: Path, tmp_path: Path) -> None:
    """summary.json records the sha256 of the config and of every agent's files; a reading command refuses
    a file changed since in one line, the others still open, and `rlexp verify` reports each."""
    recorded = json.loads((run / "summary.json").read_text())["checksums"]
    assert {"config.yaml", "model.zip", "vecnormalize.pkl", "best/model.zip"} <= set(recorded)
    stranger = tmp_path / "stranger"
    shutil.copytree(run, stranger)
    verified = rlexp_cli(["verify", str(stranger)], tmp_path)
    assert verified.returncode == 0 and verified.stdout.strip().endswith("as written and allowed"), verified.stdout
    with zipfile.ZipFile(stranger / "best" / "model.zip") as archive:  # a valid zip, one value changed
        data = json.loads(archive.read("data"))
    tampered_zip(stranger / "best" / "model.zip", "ep_info_buffer", pickle.dumps(None))
    assert data  # (it was an SB3 zip)
    refused = rlexp_cli(["evaluate", str(stranger), "--agent", "best", "--episodes", "1"], tmp_path)
    assert refused.returncode == 1
    (line,) = stderr_lines(refused)
    assert f"{stranger / 'best' / 'model.zip'}: changed since the run wrote it" in line, line
    assert rlexp_cli(["evaluate", str(stranger), "--episodes", "1"], tmp_path).returncode == 0  # final: unchanged
    verified = rlexp_cli(["verify", str(stranger)], tmp_path)
    assert verified.returncode == 1
    assert any(line.split() == ["best/model.zip", "CHANGED", "since", "the", "run", "wrote", "it"]
               for line in verified.stdout.splitlines()), verified.stdout  # fmt: skip


def test_an_evaluation_record_names_the_agent_it_scored_and_a_running_run_says_so(run: Path, tmp_path: Path) -> None:
    """A run still training may replace best/ after it is evaluated: the record carries the agent's step
    and sha256 and the run's status, and the command says so in a line; a run whose process is gone is
    called dead."""
    from rlexp.lifecycle import lock

    stranger = _forged(run, tmp_path)
    summary = json.loads((stranger / "summary.json").read_text())
    summary["status"] = "running"
    (stranger / "summary.json").write_text(json.dumps(summary))
    with lock.held(stranger):  # (as its training process holds it)
        result = rlexp_cli(["evaluate", str(stranger), "--agent", "best", "--episodes", "2"], tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    (record_file,) = (stranger / "eval").glob("best_*.json")
    record = json.loads(record_file.read_text())
    import hashlib

    assert record["agent_sha256"] == hashlib.sha256((stranger / "best" / "model.zip").read_bytes()).hexdigest()
    assert record["run_status"] == "running" and record["agent_step"] > 0
    assert (
        f"rlexp: note: the run is still training: this scored its best agent of step {record['agent_step']:,} "
        f"(sha256 {record['agent_sha256'][:12]}), which training may replace"
    ) in result.stdout.splitlines()

    # no process holds it now: it died, and nothing will replace the agent unless it is continued
    result = rlexp_cli(["evaluate", str(stranger), "--agent", "best", "--episodes", "2"], tmp_path)
    assert result.returncode == 0 and json.loads(record_file.read_text())["run_status"] == "died"
    assert (
        f"rlexp: note: this scored its best agent of step {record['agent_step']:,}; the run died before it "
        "finished, with no checkpoint to continue from (callbacks=checkpoints saves them)"
    ) in result.stdout.splitlines(), result.stdout


@pytest.mark.parametrize(
    ("module", "name"),
    [
        ("rlexp.builders.wrappers", "__builtins__.get"),  # protocol 4 walks a dotted name through attributes
        ("numpy.dtypes", "__builtins__.get"),
        ("gymnasium.spaces.box", "np.f2py.subprocess.Popen"),
        ("stable_baselines3.common.utils", "SummaryWriter"),  # a writer that a module of SB3 imports
        ("builtins", "eval"),
    ],
)
def test_a_pickle_reaches_no_callable_outside_the_allow_list(module: str, name: str) -> None:
    from rlexp.rundir.pickles import restricted_loads

    payload = b"\x80\x04" + pickle.dumps(module, 4)[2:-1] + pickle.dumps(name, 4)[2:-1] + b"\x93"
    payload += pickle.dumps(("x",), 4)[2:-1] + b"R."
    with pytest.raises(rlexp.ConfigError, match=f"its pickle names {re.escape(module)}"):
        restricted_loads(payload, "payload")


def test_the_objects_a_tuned_run_pickles_load_under_the_allow_list() -> None:
    """Action noise keeps its dtype (a NumPy scalar class, ``numpy.float32``): TD3's model zip names it."""
    from gymnasium import spaces
    from stable_baselines3.common.noise import NormalActionNoise, OrnsteinUhlenbeckActionNoise

    from rlexp.rundir.pickles import restricted_loads

    objects = [
        NormalActionNoise(np.zeros(2), 0.1 * np.ones(2), dtype=np.float32),
        OrnsteinUhlenbeckActionNoise(np.zeros(2), 0.1 * np.ones(2), dtype=np.float64),
        spaces.Box(-1.0, 1.0, (2,), np.float32),
        np.float32(1.5),
        np.int64,
        np.bool_(True),
    ]
    for obj in objects:
        loaded = restricted_loads(pickle.dumps(obj), "objects")
        assert type(loaded) is type(obj) and repr(loaded) == repr(obj)
    noise = restricted_loads(pickle.dumps(objects[0]), "noise")
    assert noise._dtype is np.float32 and noise().dtype == np.float32
    with pytest.raises(rlexp.ConfigError, match=r"its pickle names numpy\.load,"):
        restricted_loads(b"\x80\x04cnumpy\nload\n.", "payload")
