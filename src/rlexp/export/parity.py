"""Proof that an exported file does what the agent does: episodes of the run's eval env played by the
SB3 agent (``predict(deterministic=True)`` through VecNormalize), their raw observations recorded, then
given to the exported file as one batch, and as a batch of one; every output compared.

Discrete actions must be equal and continuous outputs within ``TOLERANCE``; RecurrentPPO's state out is
compared as well, each step fed the state SB3 had at that step.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.vec_env import VecEnv

from rlexp.export.formats import Runner
from rlexp.export.graph import Graph, Tensor

TOLERANCE = 1e-5
MAX_STEPS = 20_000  # an env that never ends an episode still ends its check
CHUNK = 2_048  # rows per call of the exported file


@dataclass
class Recording:
    """The graph's inputs and SB3's outputs, one row per step (the state's batch axis is its second)."""

    inputs: list[np.ndarray]
    outputs: list[np.ndarray]
    returns: list[float] = field(default_factory=list)
    steps: int = 0


def _joined(rows: list[list[np.ndarray]], graph_tensors: list[Tensor]) -> list[np.ndarray]:
    return [
        np.concatenate([row[i] for row in rows], axis=t.shape.index("batch")).astype(t.dtype, copy=False)
        for i, t in enumerate(graph_tensors)
    ]


def record(model: BaseAlgorithm, venv: VecEnv, graph: Graph, episodes: int, seed: int) -> Recording:
    """``episodes`` episodes of the agent on the one-env ``venv`` seeded ``seed`` (as `rlexp evaluate`
    plays them), or ``MAX_STEPS`` steps, whichever ends first."""
    keys, lstm = graph.module.keys, graph.lstm
    venv.seed(seed)
    obs = venv.reset()
    state: tuple[np.ndarray, ...] | None = None
    start = np.ones((1,), dtype=bool)
    rows_in: list[list[np.ndarray]] = []
    rows_out: list[list[np.ndarray]] = []
    out = Recording([], [])
    while len(out.returns) < episodes and out.steps < MAX_STEPS:
        raw = graph.layers.raw(obs)
        inputs = [raw] if keys is None else [raw[k] for k in keys]
        action, new_state = model.predict(obs, state=state, episode_start=start, deterministic=True)  # type: ignore[arg-type]  # (VecEnvObs has tuples; none is exported)
        outputs = [np.asarray(action)]
        if lstm:
            zeros = np.zeros((lstm["num_layers"], 1, lstm["hidden_size"]), dtype=np.float32)
            inputs += [*(state if state is not None else (zeros, zeros)), start.astype(np.float32)]
            outputs += list(new_state)  # type: ignore[arg-type]  # (a recurrent policy returns its state)
        rows_in.append(inputs)
        rows_out.append(outputs)
        obs, _, dones, infos = venv.step(action)
        state, start = new_state, dones
        out.steps += 1
        if "episode" in infos[0]:  # the Monitor's: an episode's real end (not a lost life)
            out.returns.append(float(infos[0]["episode"]["r"]))
    out.inputs, out.outputs = _joined(rows_in, graph.inputs), _joined(rows_out, graph.outputs)
    return out


def _rows(arrays: list[np.ndarray], graph: Graph, lo: int, hi: int) -> list[np.ndarray]:
    return [np.take(a, range(lo, hi), axis=t.shape.index("batch")) for a, t in zip(arrays, graph.inputs, strict=True)]


def _run(runner: Runner, recording: Recording, graph: Graph) -> list[np.ndarray]:
    chunks = [
        runner(_rows(recording.inputs, graph, lo, min(lo + CHUNK, recording.steps)))
        for lo in range(0, recording.steps, CHUNK)
    ]
    return [np.concatenate([c[i] for c in chunks], axis=t.shape.index("batch")) for i, t in enumerate(graph.outputs)]


def compare(runner: Runner, recording: Recording, graph: Graph, required: bool = True) -> dict[str, Any]:
    """Per output: the largest difference from SB3 and (discrete) how many rows differ; ``passed``."""
    batch = _run(runner, recording, graph)
    one = runner(_rows(recording.inputs, graph, 0, 1))
    result: dict[str, Any] = {"outputs": {}, "required": required}
    passed = True
    for i, t in enumerate(graph.outputs):
        expected, got = recording.outputs[i], batch[i]
        axis = t.shape.index("batch")
        if got.shape != expected.shape:
            result["outputs"][t.name] = {"error": f"shape {list(got.shape)}, SB3's {list(expected.shape)}"}
            passed = False
            continue
        diff = np.abs(got.astype(np.float64) - expected.astype(np.float64))
        first = np.take(expected, [0], axis=axis).astype(np.float64)
        row: dict[str, Any] = {
            "max_abs_diff": float(diff.max(initial=0.0)),
            "batch_1_max_abs_diff": float(np.abs(one[i].astype(np.float64) - first).max(initial=0.0)),
        }
        exact = t.dtype == "int64"
        if exact:
            differs = np.moveaxis(diff, axis, 0).reshape(recording.steps, -1).any(axis=1)
            row["rows_differing"] = int(differs.sum())
            row["agreement"] = 1.0 - row["rows_differing"] / recording.steps
        limit = 0.0 if exact else TOLERANCE
        row["passed"] = row["max_abs_diff"] <= limit and row["batch_1_max_abs_diff"] <= limit
        passed &= row["passed"]
        result["outputs"][t.name] = row
    result["passed"] = passed
    return result


def failure(name: str, result: dict[str, Any]) -> str:
    """One line: which output of ``name`` differs from SB3, and by how much."""
    parts = []
    for output, row in result["outputs"].items():
        if "error" in row:
            parts.append(f"{output}: {row['error']}")
        elif not row["passed"]:
            worst = max(row["max_abs_diff"], row["batch_1_max_abs_diff"])
            many = f", {row['rows_differing']} of the rows differ" if "rows_differing" in row else ""
            limit = "equal" if "rows_differing" in row else f"<= {TOLERANCE:g}"
            parts.append(f"{output} differs by up to {worst:.3g} (needs {limit}{many})")
    return f"{name} does not match the SB3 agent: " + "; ".join(parts)
