"""rlexp on Hydra 1.3 and 1.4 alike (nox -s tests-hydra14 runs every default test on 1.4): no deprecation
warning from rlexp's own code, and on 1.4 Hydra's execution whitelist holds the names a config holds as text,
no other."""

from __future__ import annotations

import subprocess
import sys

import hydra
import pytest
from conftest import FAST
from hydra.errors import InstantiationException
from omegaconf import OmegaConf

from rlexp.config.hydra_versions import has_whitelist, instantiate, named_targets

# what Hydra 1.4 and OmegaConf 2.4 say of a call they deprecate, and of a target no whitelist named
DEPRECATED = ("deprecat", "whitelist", "version_base", "hydra15migration", "editable hydra_plugins")


def _rlexp(args: list[str], cwd) -> subprocess.CompletedProcess:
    """A fresh interpreter (the tests' fork server would have said its import-time warnings already)."""
    return subprocess.run([sys.executable, "-m", "rlexp", *args], cwd=cwd, capture_output=True, text=True, timeout=600)


def test_a_run_a_search_and_evaluate_say_nothing_deprecated(tmp_path):
    ran = [_rlexp([*FAST, "hydra.run.dir=run"], tmp_path)]
    ran.append(_rlexp(["evaluate", "run", "--episodes", "1"], tmp_path))
    search = ["-m", "hparams=search", "hydra/sweeper=optuna", "hydra.sweeper.n_trials=1", "hydra.sweep.dir=sweep"]
    ran.append(_rlexp([*search, *FAST], tmp_path))
    for result in ran:
        assert result.returncode == 0, result.stderr[-2000:]
        said = [line for line in result.stderr.splitlines() if any(word in line.lower() for word in DEPRECATED)]
        assert said == [], f"on Hydra {hydra.__version__}: {said}"


def test_the_names_a_config_holds_as_text_and_no_computed_one():
    node = OmegaConf.create(
        {
            "algo": {"_target_": "stable_baselines3.PPO", "policy_kwargs": {"activation_fn": {
                "_target_": "hydra.utils.get_class", "path": "torch.nn.ReLU"}}},
            "lr_schedule": {"_target_": "rlexp.builders.schedules.linear"},
            "computed": {"_target_": "${lr_schedule._target_}"},
            "wrappers": [{"_target_": "gymnasium.wrappers.TimeLimit"}],
        }
    )  # fmt: skip
    assert named_targets(node) == [
        "gymnasium.wrappers.TimeLimit",
        "hydra.utils.get_class",
        "rlexp.builders.schedules.linear",
        "stable_baselines3.PPO",
        "torch.nn.ReLU",
    ]


@pytest.mark.skipif(not has_whitelist(), reason=f"Hydra {hydra.__version__} has no execution whitelist (1.4 has)")
def test_on_hydra_14_a_target_no_config_names_as_text_is_refused_by_hydra():
    """rlexp's allow-list approves the names a run dir's config holds; Hydra refuses at the call any other
    (here one an interpolation computes)."""
    node = OmegaConf.create({"name": "collections.OrderedDict", "made": {"_target_": "${name}"}})
    with pytest.raises(InstantiationException, match=r"collections\.OrderedDict"):
        instantiate(node.made)
    assert instantiate(OmegaConf.create({"_target_": "collections.OrderedDict"})) == {}


def test_a_factory_whose_return_annotation_does_not_resolve_builds(tmp_path, monkeypatch):
    """A user's builder annotated with a name imported for type checking only: built as on Hydra 1.3."""
    (tmp_path / "typed_factory.py").write_text(
        "from __future__ import annotations\nfrom typing import TYPE_CHECKING\n\n"
        "if TYPE_CHECKING:\n    from collections import OrderedDict\n\n\n"
        "def make() -> OrderedDict:\n    import collections\n\n    return collections.OrderedDict(a=1)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert instantiate(OmegaConf.create({"_target_": "typed_factory.make"})) == {"a": 1}
