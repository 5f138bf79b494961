"""Checks of an experiment config that build nothing: keys a ``+key=value`` slipped past the schema, ranges
no type expresses, and warnings about valid but suspicious values. The checks that build (envs, the
model) are the front door's (rlexp.run.front_door)."""

from __future__ import annotations

import copy
import dataclasses
import difflib
from collections.abc import Iterator
from typing import Any

from omegaconf import DictConfig, OmegaConf, open_dict, read_write

from rlexp.config.schema import AlgoConfig, EnvConfig, EvalConfig, ExperimentConfig, Range, as_experiment, field_range
from rlexp.errors import ConfigError


def ranged_values(node: DictConfig, path: str = "") -> Iterator[tuple[str, Any, Range]]:
    """(dotted key, value, range) of each key whose schema field declares a range (rlexp.config.schema's
    ``ranged``), in the config's order; a key the algorithm does not have is not there to check."""
    schema = OmegaConf.get_type(node)
    for key in node:
        full = f"{path}.{key}" if path else str(key)
        child = node._get_node(key)
        if isinstance(child, DictConfig):
            if not child._is_none() and not child._is_missing():
                yield from ranged_values(child, full)
        elif (
            isinstance(schema, type)
            and dataclasses.is_dataclass(schema)
            and (must_be := field_range(schema, str(key))) is not None
        ):
            yield full, OmegaConf.select(node, str(key), default=None), must_be


def check_ranges(node: DictConfig) -> None:
    """Ranges that no type expresses (declared with their keys in the schema), under ``node``: a config of
    any schema, walked key by key as ``ranged_values`` does (the front door gives the experiment config, so
    that a key is named from its root: ``algo.gamma``)."""
    for key, value, must_be in ranged_values(node):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue  # null, or not a number (SAC's ent_coef: "auto")
        if value not in must_be:
            raise ConfigError(f"{key}={value}: must be {must_be}")


def check_evaluation_count(eval_cfg: EvalConfig, n_timesteps: int) -> None:
    """Evaluations that fit in the budget: ``callbacks.eval.n_evaluations`` at most one per step."""
    n_evaluations = eval_cfg.n_evaluations
    if n_evaluations is not None and n_evaluations > n_timesteps:
        raise ConfigError(f"callbacks.eval.n_evaluations={n_evaluations}: must be <= n_timesteps={n_timesteps}")


def _layer_sizes(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in value)


def check_policy_kwargs(algo: AlgoConfig) -> None:
    """algo.policy_kwargs.net_arch as SB3 takes it (torch would only say "empty(): argument 'size'...")."""
    net_arch = (algo.policy_kwargs or {}).get("net_arch")
    if net_arch is None:
        return
    value = OmegaConf.to_container(net_arch) if OmegaConf.is_config(net_arch) else net_arch
    ok = _layer_sizes(value) or (
        isinstance(value, dict)
        and bool(value)
        and all(k in ("pi", "vf", "qf") and _layer_sizes(v) for k, v in value.items())
    )
    if not ok:
        raise ConfigError(
            f"algo.policy_kwargs.net_arch={value!r}: takes a list of layer sizes ([64, 64]) or one per network "
            "({pi: [64, 64], vf: [64, 64]}; pi, vf or qf)"
        )


def did_you_mean(key: str, known: list[str]) -> str:
    """' (did you mean n_timesteps?)' for a misspelt key, '' when nothing is close; case aside (``algo=PPO``),
    and both of two that are as close (``n_eval_episodes``: final_episodes or n_episodes)."""
    scored = sorted(((difflib.SequenceMatcher(None, key.lower(), k.lower()).ratio(), k) for k in known), reverse=True)
    close = [k for score, k in scored[:2] if score >= max(0.6, scored[0][0] - _TIE)]
    return f" (did you mean {' or '.join(close)}?)" if close else ""


_TIE = 0.05  # two suggestions this close in similarity are both named


def reject_unknown_keys(node: DictConfig, path: str = "") -> None:
    """Refuse keys that a ``+key=value`` override slipped past a schema (Hydra adds those unchecked)."""
    schema = OmegaConf.get_type(node)
    if not dataclasses.is_dataclass(schema):
        return
    known = [f.name for f in dataclasses.fields(schema)]
    for key in node:
        full = f"{path}.{key}" if path else str(key)
        if key not in known:
            hint = did_you_mean(str(key), known) or f" (valid keys: {', '.join(sorted(known))})"
            raise ConfigError(f"{full}: unknown key for {schema.__name__}{hint}")
        child = node._get_node(key)
        if isinstance(child, DictConfig):
            reject_unknown_keys(child, full)


def job_config(config: DictConfig) -> ExperimentConfig:
    """The experiment config of a Hydra config (without its ``hydra`` node), as the task receives it, read
    through its schema (rlexp.config.schema.as_experiment)."""
    cfg = copy.deepcopy(config)
    with read_write(cfg), open_dict(cfg):
        del cfg["hydra"]
    return as_experiment(cfg)


def tuned_for(env: EnvConfig, tuned_env_id: str | None) -> bool:
    """Whether the tuned file tuned for ``tuned_env_id`` applies to the env trained: its own id, an id the
    preset answers to (RL Zoo's Hopper-v4 for Hopper-v5), or any game of a family tuned as one (Atari)."""
    if tuned_env_id == env.id or (env.family is not None and tuned_env_id == env.family):
        return True
    return env.id in (getattr(env, "aliases", None) or [])


def config_warnings(
    *,
    algo: AlgoConfig,
    env: EnvConfig,
    n_timesteps: int,
    trained_agent: str | None,
    tuned_file: str | None,
    tuned_env_id: str | None,
) -> list[str]:
    """What a config that is valid may still get wrong: warned about at the start of the run, and recorded.
    Each parameter is the experiment config's key of that name (``algo``, ``env``: its groups)."""
    found = []
    starts = getattr(algo, "learning_starts", None)  # (off-policy algorithms')
    if isinstance(starts, int) and trained_agent is None and starts >= n_timesteps:
        found.append(
            f"algo.learning_starts={starts} >= n_timesteps={n_timesteps}: the agent only collects "
            "random transitions and never trains"
        )
    if tuned_file and not tuned_for(env, tuned_env_id):
        found.append(
            f"tuned/{tuned_file}.yaml was tuned for {tuned_env_id}, not env.id={env.id}; "
            "add ~tuned to train with the algorithm's defaults"
        )
    return found
