"""Hydra sweep syntax (choice/range/interval/tag) -> Optuna distributions, checked before a study starts."""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import (
    ChoiceSweep,
    IntervalSweep,
    Override,
    ParsedElementType,
    QuotedString,
    RangeSweep,
)
from omegaconf import DictConfig, OmegaConf
from optuna.distributions import (
    BaseDistribution,
    CategoricalChoiceType,
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
)

from rlexp.errors import ConfigError

log = logging.getLogger(__name__)

_MISSING = object()


def _literal(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def _choice(value: ParsedElementType) -> CategoricalChoiceType:
    """Optuna's choices must be scalars: lists/dicts (e.g. net_arch) travel as compact literals."""
    if isinstance(value, (list, dict)):
        return _literal(value)
    assert not isinstance(value, QuotedString), "Hydra unquotes choice() arguments before the sweep holds them"
    return value


def _distribution(override: Override) -> BaseDistribution:
    key, value = override.key_or_group, override.value()
    if isinstance(value, ChoiceSweep):
        if not value.list:
            raise ConfigError(f"hydra.sweeper.params.{key}: choice() is empty")
        return CategoricalDistribution([_choice(v) for v in value.list])
    if isinstance(value, RangeSweep):
        written = override.get_value_string()
        first, stop, step = value.start, value.stop, value.step
        assert first is not None and stop is not None, "Hydra's range() always has a start and a stop"
        if isinstance(first, int) and isinstance(stop, int) and isinstance(step, int):
            values = list(range(first, stop, step))  # Python's range: stop excluded
            if not values:
                raise ConfigError(f"hydra.sweeper.params.{key}: {written} is empty")
            return IntDistribution(values[0], values[-1], step=step)
        # floats: the values Hydra's range lists, counted in decimal (0.9 + 3 x 0.01 is 0.93, not 0.930...01)
        start, end, by = (Decimal(str(x)) for x in (first, stop, step))
        count = math.ceil((end - start) / by) if by > 0 else 0
        if count <= 0:
            raise ConfigError(f"hydra.sweeper.params.{key}: {written} is empty")
        return FloatDistribution(float(start), float(start + (count - 1) * by), step=float(by))
    if isinstance(value, IntervalSweep):
        low, high = value.start, value.end
        assert low is not None and high is not None, "Hydra's interval() always has both ends"
        if not low < high:
            raise ConfigError(f"hydra.sweeper.params.{key}: interval({low}, {high}) is empty or reversed")
        log = "log" in value.tags
        if log and low <= 0:
            raise ConfigError(f"hydra.sweeper.params.{key}: a log interval needs low > 0, got {low}")
        if "int" in value.tags or (isinstance(low, int) and isinstance(high, int)):
            return IntDistribution(int(low), int(high), log=log)
        return FloatDistribution(float(low), float(high), log=log)
    # a single value: the parameter is fixed for every trial (a list/dict value is held as it is)
    return CategoricalDistribution([value])  # type: ignore[arg-type]  # (Optuna's types want scalars; it takes a list)


def described(distribution: BaseDistribution) -> str:
    """A distribution as the command line writes it: ``choice(32, 64)``, ``tag(log, interval(1e-05, 0.01))``."""
    if isinstance(distribution, CategoricalDistribution):
        return f"choice({', '.join(map(str, distribution.choices))})"
    assert isinstance(distribution, (IntDistribution, FloatDistribution)), f"no sweep syntax for {distribution!r}"
    if isinstance(distribution, IntDistribution) and distribution.step != 1:
        step = distribution.step
        return f"range({distribution.low}, {distribution.high + step}, {step})"
    interval = f"interval({distribution.low}, {distribution.high})"
    return f"tag(log, {interval})" if distribution.log else interval


def parse_search_space(
    params: Mapping[str, Any], extra_overrides: list[str], config: DictConfig, fixed: Sequence[str] = ()
) -> dict[str, BaseDistribution]:
    """Distributions for ``hydra.sweeper.params`` plus sweep overrides from the command line.

    A plain ``key=value`` on the command line (in ``fixed``) takes that key out of the search. Each key
    must name a value of the composed config (a parameter the algorithm does not have fails here,
    before anything is written to a study): ``config``, the sweep's composed config, is taken whole because
    any of its keys may be searched.
    """
    fixed_keys = {line.split("=", 1)[0].lstrip("+~") for line in fixed}
    lines = [f"{key}={value}" for key, value in params.items() if key.lstrip("+") not in fixed_keys]
    lines += list(extra_overrides)
    try:
        overrides = OverridesParser.create().parse_overrides(lines)
    except Exception as err:  # Hydra's grammar errors
        raise ConfigError(f"hydra.sweeper.params: {err}") from None
    space: dict[str, BaseDistribution] = {}
    caps = _budget_caps(config.n_timesteps, OmegaConf.select(config, "env.n_envs", default=1))
    for override in overrides:
        key = override.key_or_group
        prefix = "++" if override.is_force_add() else "+" if override.is_add() else ""
        if not prefix and OmegaConf.select(config, key, default=_MISSING) is _MISSING:
            algo = OmegaConf.select(config, "algo._target_", default="?")
            raise ConfigError(f"hydra.sweeper.params.{key}: no such key in the config (algo {algo})")
        # the name keeps its prefix: a job adds ++algo.policy_kwargs.net_arch=... to an empty dict
        space[prefix + key] = _within_budget(key, _distribution(override), caps)
    return space


def _budget_caps(n_timesteps: int, n_envs: int | None) -> dict[str, tuple[int, str]]:
    """Largest useful value of parameters that the per-trial budget (``n_timesteps`` over ``n_envs`` envs)
    bounds, and why."""
    budget = int(n_timesteps)
    n_envs = int(n_envs or 1)
    return {
        # an off-policy agent that spends most of the budget collecting random transitions learns nothing
        "algo.learning_starts": (budget // 2, f"half the per-trial budget n_timesteps={budget}"),
        # a rollout longer than the budget is never trained on
        "algo.n_steps": (max(budget // n_envs, 1), f"n_timesteps={budget} / env.n_envs={n_envs}"),
    }


def _within_budget(key: str, dist: BaseDistribution, caps: dict[str, tuple[int, str]]) -> BaseDistribution:
    """Drops values of ``key`` that would make a trial meaningless for the per-trial budget (``caps``:
    _budget_caps; e.g. SAC's learning_starts=20000 with 20,000 steps per trial)."""
    cap = caps.get(key)
    if cap is None:
        return dist
    limit, why = cap
    if isinstance(dist, CategoricalDistribution):
        kept = [c for c in dist.choices if not isinstance(c, (int, float)) or c <= limit]
        if not kept:
            raise ConfigError(f"hydra.sweeper.params.{key}: every choice {list(dist.choices)} exceeds {limit} ({why})")
        if len(kept) < len(dist.choices):
            log.info(
                "search space: %s drops %s (above %s, %s)", key, [c for c in dist.choices if c not in kept], limit, why
            )
        return CategoricalDistribution(kept)
    if isinstance(dist, (IntDistribution, FloatDistribution)) and dist.high > limit:
        if dist.low > limit:
            raise ConfigError(f"hydra.sweeper.params.{key}: starts at {dist.low}, above {limit} ({why})")
        log.info("search space: %s capped at %s (%s)", key, limit, why)
        if isinstance(dist, IntDistribution):
            high = dist.low + (limit - dist.low) // dist.step * dist.step
            return IntDistribution(dist.low, high, log=dist.log, step=dist.step)
        return FloatDistribution(dist.low, float(limit), log=dist.log, step=dist.step)
    return dist
