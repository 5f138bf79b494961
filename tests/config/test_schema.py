"""The schema is the one home of the experiment config's defaults and ranges: no YAML option restates a
default, every declared range is checked, and the lists of algorithms are the registry's."""

from __future__ import annotations

import dataclasses
from importlib.resources import files
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import compose_cfg
from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig, ListConfig, OmegaConf, open_dict

import hydra_plugins.rlexp_optuna_sweeper.config  # noqa: F401  (registers the sweeper's schema)
from rlexp.config.algorithms import ALGORITHMS, algorithm
from rlexp.config.schema import field_range
from rlexp.config.store import register_configs
from rlexp.config.validation import check_ranges, ranged_values
from rlexp.errors import ConfigError

pytestmark = pytest.mark.unit  # pure logic in-process, no training (pytest -m unit)

CONF = Path(str(files("rlexp.conf")))
ROOT = Path(__file__).resolve().parents[2]
# what declares a default that is rlexp's own (a key of hydra-submitit-launcher's schema is its own default,
# which a launcher preset may pin)
OURS = ("rlexp.", "hydra_plugins.rlexp_")


def _schemas() -> dict[str, Any]:
    """Config-store name (``algo_ppo_schema``) -> its node, as rlexp registers them."""
    register_configs()
    store = ConfigStore.instance()
    return {n.removesuffix(".yaml"): store.load(n).node for n in store.list("") if n.endswith("_schema.yaml")}


def _own_values(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text()) or {}
    return {k: v for k, v in data.items() if k not in ("defaults", "hydra")}  # (hydra.*: Hydra's own settings)


def _extended(path: Path, schemas: dict[str, Any]) -> DictConfig | None:
    """What an option starts from before its own values: its schema's defaults, or the values of the option
    it extends (logger/mlflow extends logger/default); None for a file that extends no schema."""
    for entry in (yaml.safe_load(path.read_text()) or {}).get("defaults", []):
        if not isinstance(entry, str) or entry == "_self_":
            continue  # (a group chosen: hydra/sweeper/sampler: tpe)
        name = entry.lstrip("/").split("@", 1)[0]
        if name in schemas:
            return OmegaConf.structured(OmegaConf.get_type(schemas[name]))
        sibling = path.parent / f"{name}.yaml"
        base = _extended(sibling, schemas) if sibling.is_file() else None
        if base is not None:
            return OmegaConf.merge(base, _own_values(sibling))  # type: ignore[return-value]
    return None


def _declared_by(schema: type, name: str) -> str:
    """The module of the class that declares field ``name`` of a schema (the first in its MRO that annotates it)."""
    owner = next(c for c in schema.__mro__ if name in vars(c).get("__annotations__", {}))
    return owner.__module__


def _restated(own: Any, base: Any, merged: Any, path: str, ours: bool) -> list[str]:
    """Keys of ``own`` (plain YAML) whose value is ``base``'s own (a default of rlexp's, when ``ours``)."""
    if isinstance(own, dict) and own and isinstance(base, DictConfig):
        schema = OmegaConf.get_type(base)
        found = []
        for key, value in own.items():
            if key not in base:
                continue  # (a key of a free-form dict: no default to restate)
            here = ours
            if dataclasses.is_dataclass(schema):
                here = _declared_by(schema, key).startswith(OURS)
            child_path = f"{path}.{key}" if path else key
            found += _restated(value, base._get_node(key), merged._get_node(key), child_path, here)
        return found
    if not ours or base._is_missing():
        return []
    return [path] if _plain(base) == _plain(merged) else []


def _plain(node: Any) -> Any:
    return OmegaConf.to_container(node) if isinstance(node, (DictConfig, ListConfig)) else node._value()


def _restated_defaults(path: Path, schemas: dict[str, Any]) -> list[str] | None:
    base = _extended(path, schemas)
    if base is None:
        return None
    own = _own_values(path)
    return _restated(own, base, OmegaConf.merge(base, own), "", ours=True) if own else []


def test_no_yaml_option_restates_a_default():
    """Defaults live in the schema: an option sets only what its choice changes, the primary config only
    chooses options. (Files that extend no schema are values for a purpose, not defaults: tuned/<algo>_<env>
    for a pair, hparams/search for a search, schedule/ and wrappers/ for untyped nodes.)"""
    schemas = _schemas()
    covered, restated = set(), {}
    for path in sorted(CONF.rglob("*.yaml")):
        found = _restated_defaults(path, schemas)
        if found is None:
            continue
        name = path.relative_to(CONF).as_posix()
        covered.add(name)
        if found:
            restated[name] = found
    assert {"config.yaml", "algo/ppo.yaml", "diagnostics/default.yaml", "logger/default.yaml"} <= covered
    assert {"env/cartpole.yaml", "callbacks/none.yaml", "hydra/sweeper/optuna.yaml"} <= covered
    assert restated == {}, "defaults written in YAML as well as in the schema: remove them from the YAML"


def _out_of_range(value_range) -> float:
    return value_range.low if value_range.strict else value_range.low - 1


@pytest.mark.parametrize("algo", [a.name for a in ALGORITHMS])
def test_every_declared_range_is_checked(algo):
    cfg = compose_cfg([f"algo={algo}", "~tuned"])[0]
    ranged = {key: must_be for key, _, must_be in ranged_values(cfg)}
    assert {"algo.learning_rate", "n_timesteps", "diagnostics.q_every", "callbacks.eval.freq"} <= set(ranged)
    assert ranged["algo.learning_rate"] == field_range(algorithm(algo).schema, "learning_rate")
    for key, must_be in ranged.items():
        bad = cfg.copy()
        with open_dict(bad):
            OmegaConf.update(bad, key, _out_of_range(must_be))
        with pytest.raises(ConfigError) as err:
            check_ranges(bad)
        assert str(err.value) == f"{key}={OmegaConf.select(bad, key)}: must be {must_be}"


def test_the_lists_of_algorithms_are_the_registrys():
    """rlexp --help, its errors and the tests read the registry (ALGORITHMS); the docs' list is kept to it."""
    train_md = (ROOT / "docs" / "guides" / "train.md").read_text()
    row = next(line for line in train_md.splitlines() if line.startswith("| `algo` |"))
    assert row.split("|")[2].strip() == ", ".join(a.name for a in ALGORITHMS)
