"""Every RL Zoo pair rlexp covers composes, from the zoo's env id, to the zoo's values key by key
(rl_zoo3/hyperparams/*.yml of the rl_zoo3 wheel pinned in the dev extra), departures only where the tuned
file lists them."""

from __future__ import annotations

from typing import Any

import pytest
from omegaconf import OmegaConf
from zoo_import import ENVS, ClassRef, zoo_pairs

import rlexp
from rlexp.config.hydra_versions import instantiate

PAIRS = zoo_pairs()


def _plain(value: Any) -> Any:
    """Classes as their import path, tuples as lists: how the zoo's values are compared."""
    if isinstance(value, type):
        return ClassRef(f"{value.__module__}.{value.__qualname__}")
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _class_ref(value: ClassRef) -> ClassRef:
    """The zoo's path as the class's own (torch.nn.ReLU is torch.nn.modules.activation.ReLU)."""
    from hydra.utils import get_class

    cls = get_class(value.path)
    return ClassRef(f"{cls.__module__}.{cls.__qualname__}")


def _zoo(value: Any) -> Any:
    if isinstance(value, ClassRef):
        return _class_ref(value)
    if isinstance(value, dict):
        return {k: _zoo(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_zoo(v) for v in value]
    return value


def composed_values(cfg: Any, keys: list[str]) -> dict[str, Any]:
    """The composed config at the zoo's keys, built as the run builds them (classes instantiated)."""
    out: dict[str, Any] = {}
    for key in keys:
        if key == "env.wrappers":
            wrappers = OmegaConf.to_container(cfg.env.wrappers, resolve=True)
            out[key] = [[w.pop("_target_"), w] for w in wrappers.values()]  # type: ignore[union-attr]
        elif key in ("lr_schedule", "clip_range_schedule"):
            out[key] = OmegaConf.select(cfg, f"{key}._target_").rsplit(".", 1)[1]
        else:
            node = OmegaConf.select(cfg, key, throw_on_missing=False)
            value = OmegaConf.to_container(node, resolve=True) if OmegaConf.is_config(node) else node
            out[key] = _plain(instantiate(value, _convert_="all") if isinstance(value, (dict, list)) else value)
    return out


@pytest.mark.parametrize(("algo", "env_id"), sorted(PAIRS), ids=[f"{a}-{e}" for a, e in sorted(PAIRS)])
def test_the_zoo_id_composes_to_the_zoo_values(algo: str, env_id: str) -> None:
    zoo = {key: _zoo(value) for key, value in PAIRS[(algo, env_id)].items()}
    asked = "ALE/Breakout-v5" if env_id == "atari" else env_id
    cfg = rlexp.compose([f"algo={algo}", f"env.id={asked}"])
    assert cfg.tuned_file == f"{algo}_{ENVS[env_id].preset}"  # (each tuned file composed here, once)
    OmegaConf.to_container(cfg, resolve=True, throw_on_missing=True)
    assert cfg.n_timesteps > 0
    built = composed_values(cfg, list(zoo))
    departures = set(cfg.tuned_departures)
    differing = {k: (zoo[k], built[k]) for k in zoo if built[k] != zoo[k] and k not in departures}
    assert not differing, f"tuned/{cfg.tuned_file}.yaml differs from the zoo's {env_id} (zoo, rlexp): {differing}"
    assert departures <= set(zoo) | {"env.n_envs"}, "a departure names a key the zoo does not set"


def test_departures_are_said_with_their_reason_in_the_tuned_file() -> None:
    from importlib.resources import files

    for path in (files("rlexp.conf") / "tuned").iterdir():
        text = path.read_text()
        if "tuned_departures" in text:
            assert "rlexp departs from the zoo in" in text, path.name


def test_an_atari_game_gets_the_atari_preprocessing_and_values() -> None:
    for game in ("BreakoutNoFrameskip-v4", "ALE/Breakout-v5", "SpaceInvadersNoFrameskip-v4"):
        cfg = rlexp.compose(["algo=ppo", f"env.id={game}"])
        assert (cfg.tuned_file, cfg.env.frame_stack, cfg.algo.policy) == ("ppo_atari", 4, "CnnPolicy")
        assert cfg.env.wrappers.atari._target_.endswith("AtariWrapper") and cfg.env.kwargs.frameskip == 1
