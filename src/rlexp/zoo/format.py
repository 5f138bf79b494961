"""RL Zoo's hyperparameter format, read without eval(): one home for what the zoo's keys and Python strings
mean in rlexp's keys, for the generator of conf/tuned (tools/zoo_import.py) and for reading the config.yml
of a run the zoo trained (rlexp.zoo.log_folders).

The zoo writes Python in strings (``policy_kwargs: "dict(net_arch=[64], activation_fn=nn.ReLU)"``); they are
parsed with ``ast``, and only literals, ``dict(...)`` and the few class names below are accepted.
"""

from __future__ import annotations

import ast
import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlexp.config.env_families import FAMILIES

ZOO_VERSION = "2.9.2"
# names the zoo's Python strings use, as importable paths
NAMES = {
    "nn": "torch.nn",
    "th": "torch",
    "RMSpropTFLike": "stable_baselines3.common.sb2_compat.rmsprop_tf_like.RMSpropTFLike",
    "HerReplayBuffer": "stable_baselines3.HerReplayBuffer",
}
# the zoo's own wrapper classes -> the same behaviour outside rl_zoo3
WRAPPER_CLASSES = {
    "rl_zoo3.wrappers.FrameSkip": "rlexp.builders.wrappers.FrameSkip",
    "rl_zoo3.wrappers.YAMLCompatResizeObservation": "rlexp.builders.wrappers.ResizeObservation",
    "gymnasium.wrappers.transform_observation.GrayscaleObservation": "gymnasium.wrappers.GrayscaleObservation",
}
# the zoo's wrapper classes -> their names under env.wrappers (an env family's: the name its presets give it)
WRAPPER_NAMES = {
    **{target.rsplit(".", 1)[1]: name for family in FAMILIES for name, target in family.wrappers.items()},
    "TimeFeatureWrapper": "time_feature",
    "FrameSkip": "frame_skip",
    "ResizeObservation": "resize",
    "GrayscaleObservation": "grayscale",
}


def zoo_dir() -> Path:
    spec = importlib.util.find_spec("rl_zoo3")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(f"rl_zoo3 is not installed: pip install rl_zoo3=={ZOO_VERSION} (the dev extra)")
    return Path(next(iter(spec.submodule_search_locations))) / "hyperparams"


@dataclass(frozen=True)
class ClassRef:
    """A class the zoo names (nn.ReLU), kept as its import path."""

    path: str


def _python(node: ast.AST) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_python(node.operand)
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_python(e) for e in node.elts]
    if isinstance(node, ast.Dict):
        return {_python(k): _python(v) for k, v in zip(node.keys, node.values, strict=True)}  # type: ignore[arg-type]  # (a key None is a **spread, which the zoo's YAML never holds)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict" and not node.args:
        return {kw.arg: _python(kw.value) for kw in node.keywords}
    if isinstance(node, ast.Name) and node.id in NAMES:
        return ClassRef(NAMES[node.id])
    if isinstance(node, ast.Name) and node.id in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[node.id]
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in NAMES:
        return ClassRef(f"{NAMES[node.value.id]}.{node.attr}")
    raise ValueError(f"not a literal: {ast.unparse(node)}")


def python_string(text: str) -> Any:
    return _python(ast.parse(text.strip(), mode="eval").body)


def _wrappers(value: Any) -> list[tuple[str, dict[str, Any]]]:
    entries = value if isinstance(value, list) else [value]
    out = []
    for entry in entries:
        name, kwargs = (entry, {}) if isinstance(entry, str) else next(iter(entry.items()))
        out.append((WRAPPER_CLASSES.get(name, name), dict(kwargs or {})))
    return out


def rlexp_values(hyperparams: dict[str, Any]) -> dict[str, Any]:
    """One zoo entry as rlexp's dotted keys (``algo.batch_size``, ``env.normalize``, ``lr_schedule``...)."""
    h = dict(hyperparams)
    out: dict[str, Any] = {"n_timesteps": int(float(h.pop("n_timesteps")))}
    if "n_envs" in h:
        out["env.n_envs"] = int(h.pop("n_envs"))
    if "frame_stack" in h:
        out["env.frame_stack"] = int(h.pop("frame_stack"))
    if "env_kwargs" in h:
        out["env.kwargs"] = h.pop("env_kwargs")
    if "env_wrapper" in h:
        out["env.wrappers"] = _wrappers(h.pop("env_wrapper"))
    normalize = h.pop("normalize", False)
    if normalize:
        kwargs = python_string(normalize) if isinstance(normalize, str) else {}
        if "gamma" in h:  # the zoo discounts VecNormalize's returns with the algorithm's gamma
            kwargs["gamma"] = float(h["gamma"])
        out["env.normalize"] = True
        out["env.normalize_kwargs"] = kwargs
    if "noise_type" in h:
        out["action_noise.kind"] = h.pop("noise_type").replace("-", "_")
        out["action_noise.std"] = float(h.pop("noise_std"))
    for key, schedule in (("learning_rate", "lr_schedule"), ("clip_range", "clip_range_schedule")):
        if isinstance(h.get(key), str):
            kind, value = h[key].split("_")
            assert kind == "lin", h[key]
            h[key] = float(value)
            out[schedule] = "linear"
    for key in ("policy_kwargs", "replay_buffer_kwargs", "replay_buffer_class"):
        if isinstance(h.get(key), str):
            h[key] = python_string(h[key]) if key != "replay_buffer_class" else ClassRef(NAMES[h[key]])
    for key, value in h.items():
        out[f"algo.{key}"] = value
    return out


def yaml_value(value: Any) -> Any:
    if isinstance(value, ClassRef):
        return {"_target_": "hydra.utils.get_class", "path": value.path}
    if isinstance(value, dict):
        return {k: yaml_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [yaml_value(v) for v in value]
    return value
