"""A mistake on the command line ends in one line in rlexp's words, naming the key: the overrides a new user
gets wrong (types, choices, a list without -m, a group given as a key, a + too many, a value left out),
walked through the command's own entry point, each in a process forked from one that imported rlexp once (as
cheap as a call in this process, and nothing of it left in this one); a few as `rlexp` runs from the start."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import FAST, rlexp_cli, stderr_lines, train

from rlexp.run.mistakes import group_options, placed_groups

# mistake -> (the overrides, what the one line must hold after "rlexp: error: ")
MISTAKES = {
    # a value of the wrong type: the key, the value as typed, what the key takes
    "not an integer": (["n_timesteps=abc"], "n_timesteps=abc: not an integer"),
    "seed not an integer": (["seed=abc"], "seed=abc: not an integer"),
    "a float for an integer": (["algo.n_steps=1.5"], "algo.n_steps=1.5: not an integer"),
    "beyond any float": (["n_timesteps=1e400"], "n_timesteps=1e400: not an integer"),
    "a word for a float": (["algo.learning_rate=fast"], "algo.learning_rate=fast: not a number"),
    "a trailing dot": (["algo.gamma=0.99."], "algo.gamma=0.99.: not a number"),
    "RL Zoo's schedule syntax": (["algo.learning_rate=lin_0.001"], "algo.learning_rate=lin_0.001: not a number"),
    "a list for a number": (["algo.gamma=[0.9,0.99]"], "algo.gamma=[0.9,0.99]: not a number"),
    "not a bool": (["env.normalize=maybe"], "env.normalize=maybe: not true or false"),
    "an optional integer": (["env.max_episode_steps=abc"], "env.max_episode_steps=abc: not an integer (or null)"),
    "deep down": (["callbacks.eval.n_episodes=x"], "callbacks.eval.n_episodes=x: not an integer"),
    "a sweeper's key": (
        ["-m", "hparams=search", "hydra/sweeper=optuna", "hydra.sweeper.n_trials=abc"],
        "hydra.sweeper.n_trials=abc: not an integer",
    ),
    "a value left out": (["algo.gamma="], "algo.gamma=: no value; algo.gamma takes a number"),
    "null where a value is needed": (["seed=null"], "seed=null: seed takes an integer, not null"),
    "a word for a list": (
        ["logger.formats=csv"],
        "logger.formats=csv: logger.formats takes a list: logger.formats=[csv]",
    ),
    "a word for a dict": (
        ["callbacks.eval=3"],
        "callbacks.eval=3: callbacks.eval holds keys; set one with callbacks.eval",
    ),
    # a choice misspelt: the one meant, the choices (and no reference_type=...)
    "vec env typo": (
        ["env.vec_env=dumy"],
        "env.vec_env=dumy: no such choice (did you mean dummy?); choices: auto, dummy, lean, subproc, numpy, envpool",
    ),
    "noise kind": (
        ["action_noise.kind=gaussian"],
        "action_noise.kind=gaussian: no such choice; choices: none, normal,",
    ),
    "an optional choice": (
        ["logger.wandb.mode=onlin"],
        "(did you mean online?); choices: online, offline, disabled or null",
    ),
    "in a sweep": (["-m", "env.vec_env=dumy,dummy"], "env.vec_env=dumy: no such choice (did you mean dummy?)"),
    # a comma list on a single run
    "a list without -m": (["seed=0,1"], "seed=0,1: a comma list sweeps only with -m: rlexp -m seed=0,1"),
    "a list key without brackets": (
        ["logger.formats=csv,json"],
        "a list value is written in brackets: logger.formats=[csv,json]",
    ),
    # a group's key given an option's name
    "a schedule as a key": (
        ["lr_schedule=cosine"],
        "lr_schedule=cosine: lr_schedule is set by choosing a schedule option: ",
    ),
    "a misspelt schedule as a key": (
        ["clip_range_schedule=lineer"],
        "clip_range_schedule=lineer: clip_range_schedule is set by choosing a schedule option: "
        "schedule@clip_range_schedule=<option> (did you mean linear?); options: constant, cosine,",
    ),
    "wrappers as a key": (
        ["env.wrappers=time_feature"],
        "env.wrappers is set by choosing a wrappers option: wrappers=time_feature",
    ),
    # a + on a key the config has
    "+ on a top key": (["+seed=1"], "+seed=1: seed is in the config already; drop the +: seed=1"),
    "+ on an algo key": (
        ["+algo.gamma=0.9"],
        "+algo.gamma=0.9: algo.gamma is in the config already; drop the +: algo.gamma=0.9",
    ),
    # a key or option misspelt, or removed
    "misspelt deep key": (["callbacks.eval.n_eval_episodes=3"], "did you mean final_episodes or n_episodes?"),
    "a dash for an underscore": (
        ["n-timesteps=1000"],
        "n-timesteps: the config has no such key (did you mean n_timesteps?)",
    ),
    "an option in capitals": (["algo=PPO"], "algo=PPO: no such option (did you mean ppo?)"),
    "an option misspelt": (["algo=ppo2"], "algo=ppo2: no such option (did you mean ppo?)"),
    "an env preset misspelt": (["env=cartpol"], "env=cartpol: no such option (did you mean cartpole?)"),
    "a sweeper misspelt": (["hydra/sweeper=optun"], "hydra/sweeper=optun: no such option (did you mean optuna?)"),
    "a group removed": (
        ["~callbacks"],
        "~callbacks: rlexp needs one of the callbacks options; choose one instead: callbacks=<option>",
    ),
    "the algo removed": (["~algo"], "~algo: rlexp needs one of the algo options; choose one instead: algo=<option>"),
    "a key removed": (["~seed"], "~seed: rlexp needs seed; set it instead: seed=<value>"),
    "a value to fill in": (["callbacks.eval.n_episodes=???"], "callbacks.eval.n_episodes: no value; set one: "),
    "a run dir left out": (["hydra.run.dir="], "hydra.run.dir=: no value; give a dir: hydra.run.dir=<dir>"),
    "out of range": (["n_timesteps=-5"], "n_timesteps=-5: must be > 0"),
    "a target of an earlier release": (  # (rlexp.build is rlexp.builders since: a user's own schedule YAML)
        ["lr_schedule._target_=rlexp.build.schedules.linear"],
        "lr_schedule._target_=rlexp.build.schedules.linear: moved; write _target_=rlexp.builders.schedules.linear",
    ),
    "an unclosed bracket": (
        ["algo.policy_kwargs.net_arch=[64,64"],
        "algo.policy_kwargs.net_arch=[64,64: not a key=value override rlexp can read (",
    ),
    "an optional group's option misspelt": (
        ["-m", "hparams=search", "search_space=ppo2"],
        "search_space=ppo2: no such option (did you mean ppo?); options: a2c, dqn, ppo,",
    ),
    # rlexp check says them as training does
    "check: not an integer": (["check", "n_timesteps=abc"], "n_timesteps=abc: not an integer"),
    "check: a schedule as a key": (["check", "lr_schedule=cosine"], "schedule@lr_schedule=cosine"),
}


def _key(args: list[str]) -> str:
    """The key the line must name: the mistaken override's (the last one)."""
    return args[-1].lstrip("+~").split("=")[0]


@pytest.fixture
def rlexp_here(tmp_path) -> Callable[[list[str]], tuple[object, list[str], str]]:
    """``rlexp ARGS`` in an empty working dir: (exit status, stderr lines, stdout). Each in a process forked
    from one that imported rlexp once (tests/forked_rlexp.py): as cheap as a call in this process, and what
    the command does to a process (Hydra's logging config on its streams, the environment) stays there."""

    def run(args: list[str]) -> tuple[object, list[str], str]:
        result = rlexp_cli(args, cwd=tmp_path)
        return result.returncode, [line for line in result.stderr.splitlines() if line.strip()], result.stdout

    return run


@pytest.mark.parametrize("mistake", sorted(MISTAKES))
def test_a_mistake_is_one_line_naming_the_key_and_nothing_is_written(mistake, rlexp_here, tmp_path):
    args, expected = MISTAKES[mistake]
    code, lines, _ = rlexp_here(args)
    assert code == 1
    assert len(lines) == 1 and lines[0].startswith("rlexp: error: "), lines
    assert expected in lines[0], lines[0]
    assert _key(args) in lines[0]
    for noise in ("reference_type", "object_type", "full_key", "Error merging", "key=\\'", "Exception"):
        assert noise not in lines[0]
    assert list(tmp_path.iterdir()) == []  # no outputs/, multirun/ or .hydra/


@pytest.mark.unit
def test_each_group_placed_at_another_key_is_known_from_the_configs():
    """The groups whose options land at a key of another name come from conf/ (its defaults list and the
    options' @package headers), so that `lr_schedule=cosine` is refused for each of them."""
    placed = placed_groups()
    assert {key: group.selector for key, group in placed.items()} == {
        "lr_schedule": "schedule@lr_schedule",
        "clip_range_schedule": "schedule@clip_range_schedule",
        "env.wrappers": "wrappers",
    }
    assert all(group.options == group_options(group.selector.split("@")[0]) for group in placed.values())


@pytest.mark.unit
def test_a_temporary_name_is_never_said(tmp_path):
    """A dir that cannot be written: the error names the path the user gave, not the hidden sibling that is
    written first and swapped in (``.rep.partial-...``), nor a file's temporary (``.x.tmpPID.json``)."""
    from rlexp.files.atomic import atomic_write_text, replaced_dir

    out = _unwritable_dir(tmp_path)
    with pytest.raises(OSError) as err, replaced_dir(out / "rep") as staging:
        (staging / "report.md").write_text("never")
    assert err.value.filename == str(out / "rep")
    with pytest.raises(OSError) as err:
        atomic_write_text(out / "x.json", "{}")
    assert err.value.filename == str(out / "x.json")
    assert not list(out.glob(".*"))


def _unwritable_dir(tmp_path: Path) -> Path:
    """A dir no file can be made in: one without write permission, or (for root, whom permissions do not
    stop) /sys, where sysfs takes none."""
    if os.geteuid() != 0:
        out = tmp_path / "read-only"
        out.mkdir()
        out.chmod(0o555)
        return out
    if not os.access("/sys", os.F_OK):
        pytest.skip("no dir that root cannot write to here")
    return Path("/sys")


# a few as the user runs them: the installed command, a process of its own
@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["n_timesteps=abc"], "rlexp: error: n_timesteps=abc: not an integer"),
        (["seed=0,1"], "rlexp: error: seed=0,1: a comma list sweeps only with -m: rlexp -m seed=0,1"),
        (
            ["lr_schedule=cosine"],
            "rlexp: error: lr_schedule=cosine: lr_schedule is set by choosing a schedule option: ",
        ),
    ],
)
def test_the_command_says_it_in_one_line(args, line, tmp_path):
    result = rlexp_cli([*FAST, *args], cwd=tmp_path)
    assert result.returncode == 1 and len(stderr_lines(result)) == 1, result.stderr
    assert stderr_lines(result)[0].startswith(line)
    assert list(tmp_path.iterdir()) == []


def test_report_to_a_dir_it_cannot_write_names_that_dir(tmp_path):
    train(FAST, tmp_path / "run")
    out = _unwritable_dir(tmp_path) / "rep"
    result = rlexp_cli(["report", str(tmp_path / "run"), "--out", str(out)], cwd=tmp_path)
    assert result.returncode == 1
    (line,) = stderr_lines(result)
    assert line.startswith(f"rlexp report: error: {out}: ") and ".partial" not in line, line
