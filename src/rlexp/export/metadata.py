"""policy.json: what a program that runs the exported file needs to know, with no torch or SB3 to ask:
the env and its spaces, the inputs and outputs, the constants baked in, and how to call it."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import numpy as np
from gymnasium import spaces
from omegaconf import OmegaConf
from stable_baselines3.common.preprocessing import is_image_space

from rlexp.builders.envs import env_kwargs
from rlexp.export.graph import Graph, flat_shape
from rlexp.monitor.evaluation import EVAL_SEED_OFFSET
from rlexp.rundir.agents import SavedAgent

FORMAT_VERSION = 1
EXPORT_PACKAGES = ("onnx", "onnxruntime", "onnxscript")


def _number(x: float) -> float | str:
    return float(x) if np.isfinite(x) else str(float(x))  # "inf", "-inf": JSON has no infinity


def _bounds(values: np.ndarray) -> float | str | list[Any]:
    """One number where all are equal (an image's 0 and 255), else the list (of the Box's shape)."""
    flat = np.unique(values)
    if flat.size == 1:
        return _number(flat[0])
    return np.vectorize(_number, otypes=[object])(values).tolist()


def describe_space(space: spaces.Space) -> dict[str, Any]:
    out: dict[str, Any] = {"type": type(space).__name__}
    if isinstance(space, spaces.Dict):
        out["spaces"] = {k: describe_space(s) for k, s in space.spaces.items()}
        return out
    out["shape"] = list(flat_shape(space))
    out["dtype"] = str(np.dtype(space.dtype))
    if isinstance(space, spaces.Box):
        out["low"], out["high"] = _bounds(space.low), _bounds(space.high)
    elif isinstance(space, spaces.Discrete):
        out["n"], out["start"] = int(space.n), int(space.start)
    elif isinstance(space, spaces.MultiDiscrete):
        out["nvec"] = space.nvec.tolist()
    return out


def _normalization(graph: Graph) -> dict[str, Any] | None:
    normalize = graph.layers.normalize
    if normalize is None or not normalize.norm_obs:
        return None
    stats = normalize.obs_rms  # a Dict's: one per key of norm_obs_keys, in its order
    per_input = {
        ("obs" if k is None else k): {"mean": s.mean.tolist(), "var": s.var.tolist()}
        for k, s in (stats.items() if isinstance(stats, dict) else [(None, stats)])
    }
    return {
        "formula": "clip((obs - mean) / sqrt(var + epsilon), -clip_obs, clip_obs), in float64",
        "epsilon": float(normalize.epsilon),
        "clip_obs": float(normalize.clip_obs),
        "inputs": per_input,
    }


def _images(graph: Graph) -> dict[str, Any] | None:
    space = graph.layers.space
    parts = space.spaces if isinstance(space, spaces.Dict) else {"obs": space}
    images = [k for k, s in parts.items() if is_image_space(s, check_channels=False)]
    if not images:
        return None
    return {
        "inputs": images,
        "channels_first_inside": bool(graph.layers.transposed_keys),
        "scaled_by_255_inside": bool(graph.module.policy.normalize_images),
    }


def _actions(graph: Graph) -> str:
    module = graph.module
    if not module.box:
        return "the deterministic policy's discrete action (its mode: argmax), as int64"
    if module.squash:
        return "tanh-squashed action unsquashed to the Box bounds: low + (a + 1) / 2 * (high - low)"
    return "the Gaussian policy's mean action clipped to the Box bounds"


def usage(graph: Graph, files: dict[str, str]) -> str:
    names = [t.name for t in graph.inputs]
    if "onnx" in files:
        feed = ", ".join(f"'{n}': {n}" for n in names)
        text = f"onnxruntime.InferenceSession('{files['onnx']}').run(None, {{{feed}}})"
    else:
        text = f"torch.jit.load('{files['torchscript']}')({', '.join(names)})  (torch tensors)"
    if graph.lstm:
        text += (
            "; start with state_h = state_c = zeros(num_layers, batch, hidden_size), episode_start = 1 at an "
            "episode's first step, then feed state_h_out, state_c_out back in"
        )
    if graph.layers.frame_stack:
        text += f"; stack the last {graph.layers.frame_stack} observations on the last axis yourself (zeros at reset)"
    return text


def policy_record(
    agent: SavedAgent, graph: Graph, files: dict[str, str], opset: int | None, command: str
) -> dict[str, Any]:
    from rlexp.rundir.provenance import package_versions
    from rlexp.rundir.record import RunRecord, read_record

    cfg = agent.cfg
    model_space = graph.module.policy.action_space
    record = read_record(agent.out_dir) or RunRecord()
    return {
        "format_version": FORMAT_VERSION,
        "algo": record.algo,
        "algo_class": cfg.algo._target_,
        "agent": agent.name,
        "model": str(agent.model.resolve()),
        "files": dict(files),
        "env": {
            "id": cfg.env.id,
            "kwargs": env_kwargs(cfg.env, for_eval=True),
            "wrappers": OmegaConf.to_container(cfg.env.wrappers, resolve=True),
            "frame_stack": graph.layers.frame_stack,
            "observation_space": describe_space(graph.layers.space),
            "action_space": describe_space(model_space),
        },
        "inputs": [asdict(t) for t in graph.inputs],
        "outputs": [asdict(t) for t in graph.outputs],
        "actions": _actions(graph),
        "normalization": _normalization(graph),
        "images": _images(graph),
        "recurrent": graph.lstm or None,
        "opset": opset,
        "evaluation": {
            "seed": cfg.seed + EVAL_SEED_OFFSET,
            "episodes": int(cfg.callbacks.eval.final_episodes),
            # envs side by side: with one per episode, episode i is the first of an env reset with seed + i
            "n_envs": agent.eval_envs(int(cfg.callbacks.eval.final_episodes)),
            "deterministic": agent.deterministic(False),
            "final_eval": record.final_eval if agent.name == "final" and isinstance(record.final_eval, dict) else None,
        },
        "versions": package_versions(EXPORT_PACKAGES),
        "command": command,
        "usage": usage(graph, files),
    }
