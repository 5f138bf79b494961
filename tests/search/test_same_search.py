"""A study resumes for the search it was made for, compared by the composed config, not by the words typed;
studies that earlier releases made (which kept only the words) still resume."""

from __future__ import annotations

import json

import optuna
import pytest
from conftest import SMALL_SEARCH, rlexp_cli, stderr_lines
from hydra import compose, initialize_config_module
from hydra.core.override_parser.overrides_parser import OverridesParser

from rlexp.config.hydra_versions import version_base
from rlexp.search.space import parse_search_space
from rlexp.search.study import SEARCH_ATTR, SEARCH_COMMAND_ATTR, SEARCH_CONFIG_ATTR, search_record

# the study is opened and checked, and no trial runs (max_total_trials=0): a search's start, in seconds
NO_TRIAL = ["-m", "hydra.sweeper.max_total_trials=0", "hydra.sweeper.plots=false"]
# the same search typed otherwise: env=cartpole is the default
SAME = [o for o in SMALL_SEARCH if o != "env=cartpole"]


def _study(sweep):
    return optuna.load_study(study_name="ppo-cartpole", storage=f"sqlite:///{sweep / 'study.db'}")


def _resumes(result) -> bool:
    return result.returncode == 0 and "search ppo-cartpole done: 0 trials" in result.stdout


def _refusal(result, sweep) -> str:
    (line,) = stderr_lines(result)
    assert result.returncode == 1
    start = f"rlexp: error: study ppo-cartpole in sqlite:///{sweep / 'study.db'} was made for another search ("
    assert line.startswith(start), line
    return line[len(start) :]


@pytest.mark.slow
def test_an_equivalent_search_resumes_the_study_and_another_is_refused_naming_the_key(tmp_path):
    sweep = tmp_path / "sweep"
    made = rlexp_cli([*SMALL_SEARCH, *NO_TRIAL, "hydra.sweep.dir=sweep"], tmp_path)
    assert _resumes(made), made.stderr[-2000:]
    record = _study(sweep).user_attrs[SEARCH_CONFIG_ATTR]
    assert record["config"]["env.id"] == "CartPole-v1" and record["config"]["algo.n_epochs"] == "choice(1, 4)"
    assert "seed" not in record["config"] and not any(key.startswith("hydra.") for key in record["config"])

    same = rlexp_cli([*SAME, *NO_TRIAL, "hydra.sweep.dir=sweep"], tmp_path)
    assert _resumes(same), same.stderr[-2000:]
    other = rlexp_cli([*SAME, "callbacks.eval.n_episodes=3", *NO_TRIAL, "hydra.sweep.dir=sweep"], tmp_path)
    assert _refusal(other, sweep).startswith("callbacks.eval.n_episodes=3 now, 2 in the study); a new search: ")
    assert _study(sweep).user_attrs[SEARCH_CONFIG_ATTR] == record  # (refused: nothing written)


def _words_of_an_earlier_release(sweep, overrides: list[str]) -> None:
    """A study as releases before the config's comparison left it: the command's words only."""
    with initialize_config_module(config_module="rlexp.conf", **version_base()):
        cfg = compose("config", overrides=[o for o in overrides if "choice(" not in o], return_hydra_config=True)
    parsed = OverridesParser.create().parse_overrides(overrides)
    fixed = [o.input_line for o in parsed if not o.is_sweep_override()]
    space = parse_search_space(
        cfg.hydra.sweeper.params, [o.input_line for o in parsed if o.is_sweep_override()], cfg, fixed
    )
    sweep.mkdir()
    study = optuna.create_study(
        storage=f"sqlite:///{sweep / 'study.db'}", study_name="ppo-cartpole", direction="maximize"
    )
    study.set_user_attr(SEARCH_ATTR, search_record(space, fixed))
    study.set_user_attr(SEARCH_COMMAND_ATTR, "rlexp " + " ".join(overrides))


@pytest.mark.slow
def test_a_study_of_an_earlier_release_resumes_for_its_search_however_typed(tmp_path):
    sweep = tmp_path / "old"
    _words_of_an_earlier_release(sweep, SMALL_SEARCH)
    words = dict(_study(sweep).user_attrs[SEARCH_ATTR])
    assert words["env"] == "cartpole" and SEARCH_CONFIG_ATTR not in _study(sweep).user_attrs

    # its words composed again: another value is refused, naming the key with both values
    other = rlexp_cli([*SAME, "n_timesteps=2048", *NO_TRIAL, "hydra.sweep.dir=old"], tmp_path)
    assert _refusal(other, sweep).startswith("n_timesteps=2048 now, 1024 in the study)")
    # the same search, typed otherwise, resumes it; from then on it is compared by its config
    same = rlexp_cli([*SAME, *NO_TRIAL, "hydra.sweep.dir=old"], tmp_path)
    assert _resumes(same), same.stderr[-2000:]
    study = _study(sweep)
    assert (
        study.user_attrs[SEARCH_ATTR] == words
        and study.user_attrs[SEARCH_CONFIG_ATTR]["config"]["env.id"] == "CartPole-v1"
    )
    assert json.dumps(study.user_attrs[SEARCH_CONFIG_ATTR])  # (as Optuna's storages keep it: JSON)
