"""Checks of an experiment config that build nothing: keys a ``+key=value`` slipped past the schema, ranges
no type expresses, and warnings about valid but suspicious values. The checks that build (envs, the
model) are the front door's (rlexp.run.front_door)."""

from __future__ import annotations

import copy
import dataclasses
import difflib
import math
from collections.abc import Callable

from omegaconf import DictConfig, OmegaConf, open_dict, read_write

from rlexp.errors import ConfigError

_UNIT = ("in [0, 1]", lambda v: 0.0 <= v <= 1.0)
_POSITIVE = ("> 0", lambda v: v > 0)
_NOT_NEGATIVE = (">= 0", lambda v: v >= 0)
# key -> (what it must be, test); a key the algorithm does not have, or a null where null is allowed, is skipped
RANGES: dict[str, tuple[str, Callable[[float], bool]]] = {
    "n_timesteps": _POSITIVE,
    "seed": _NOT_NEGATIVE,  # (numpy and Gymnasium seed with non-negative integers)
    "torch_threads": (">= 1", lambda v: v >= 1),
    "algo.learning_rate": _POSITIVE,
    "algo.gamma": _UNIT,
    "algo.gae_lambda": _UNIT,
    "algo.tau": _UNIT,
    "algo.exploration_fraction": _UNIT,
    "algo.exploration_initial_eps": _UNIT,
    "algo.exploration_final_eps": _UNIT,
    "algo.batch_size": _POSITIVE,
    "algo.buffer_size": _POSITIVE,
    "algo.n_steps": _POSITIVE,
    "algo.n_epochs": _POSITIVE,
    "algo.learning_starts": _NOT_NEGATIVE,
    "algo.clip_range": _POSITIVE,
    "algo.ent_coef": _NOT_NEGATIVE,
    "algo.vf_coef": _NOT_NEGATIVE,
    "algo.max_grad_norm": _POSITIVE,
    "algo.target_update_interval": _POSITIVE,
    "algo.policy_delay": _POSITIVE,
    "algo.n_delta": _POSITIVE,
    "env.n_envs": _POSITIVE,
    "env.frame_stack": _NOT_NEGATIVE,
    "env.max_episode_steps": _POSITIVE,
    "action_noise.std": _NOT_NEGATIVE,
    "callbacks.eval.freq": (">= 0 (0: no periodic evaluation)", lambda v: v >= 0),
    "callbacks.eval.n_episodes": _POSITIVE,
    "callbacks.eval.n_evaluations": _POSITIVE,
    "callbacks.eval.final_episodes": _POSITIVE,
    "callbacks.eval.n_envs": ("> 0 (null: one per episode, at most 16)", lambda v: v > 0),
    "callbacks.checkpoint.freq": (">= 0 (0: no checkpoints)", lambda v: v >= 0),
    "random_baseline.episodes": (">= 0 (0: no baseline)", lambda v: v >= 0),
    "callbacks.checkpoint.keep_last": _POSITIVE,
    "diagnostics.early": _UNIT,
    "diagnostics.entropy_floor": _UNIT,
    "diagnostics.ent_coef_floor": _UNIT,
    "diagnostics.explained_variance_updates": _POSITIVE,
    "diagnostics.max_approx_kl": _NOT_NEGATIVE,
    "diagnostics.max_clip_fraction": _UNIT,
    "diagnostics.q_factor": _NOT_NEGATIVE,
    "diagnostics.q_every": _POSITIVE,
    "diagnostics.train_eval_gap": _NOT_NEGATIVE,
}


def check_ranges(cfg: DictConfig) -> None:
    """Ranges that no typed schema expresses (RANGES), and evaluations that fit in the budget."""
    for key, (rule, ok) in RANGES.items():
        value = OmegaConf.select(cfg, key, default=None)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue  # absent, null, or not a number (SAC's ent_coef: "auto")
        if not ok(value) or (isinstance(value, float) and not math.isfinite(value)):
            raise ConfigError(f"{key}={value}: must be {rule}")
    n_evaluations = cfg.callbacks.eval.n_evaluations
    if n_evaluations is not None and n_evaluations > cfg.n_timesteps:
        raise ConfigError(f"callbacks.eval.n_evaluations={n_evaluations}: must be <= n_timesteps={cfg.n_timesteps}")


def _layer_sizes(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in value)


def check_policy_kwargs(cfg: DictConfig) -> None:
    """algo.policy_kwargs.net_arch as SB3 takes it (torch would only say "empty(): argument 'size'...")."""
    net_arch = OmegaConf.select(cfg, "algo.policy_kwargs.net_arch", default=None)
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
    """' (did you mean n_timesteps?)' for a misspelt key, '' when nothing is close."""
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


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


def job_config(config: DictConfig) -> DictConfig:
    """The experiment config of a Hydra config (without its ``hydra`` node), as the task receives it."""
    cfg = copy.deepcopy(config)
    with read_write(cfg), open_dict(cfg):
        del cfg["hydra"]
    return cfg


def tuned_for(cfg: DictConfig) -> bool:
    """Whether the tuned file applies to the env trained: its own id, an id the preset answers to (RL Zoo's
    Hopper-v4 for Hopper-v5), or any game of a family tuned as one (Atari)."""
    env = cfg.env
    if cfg.tuned_env_id == env.id or (env.family is not None and cfg.tuned_env_id == env.family):
        return True
    return env.id in env.get("aliases", [])


def config_warnings(cfg: DictConfig) -> list[str]:
    """What a config that is valid may still get wrong: warned about at the start of the run, and recorded."""
    found = []
    starts = OmegaConf.select(cfg, "algo.learning_starts", default=None)
    if isinstance(starts, int) and cfg.trained_agent is None and starts >= cfg.n_timesteps:
        found.append(
            f"algo.learning_starts={starts} >= n_timesteps={cfg.n_timesteps}: the agent only collects "
            "random transitions and never trains"
        )
    if cfg.tuned_file and not tuned_for(cfg):
        found.append(
            f"tuned/{cfg.tuned_file}.yaml was tuned for {cfg.tuned_env_id}, not env.id={cfg.env.id}; "
            "add ~tuned to train with the algorithm's defaults"
        )
    return found
