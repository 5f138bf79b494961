"""An export from a saved agent to a dir of files: the graph built on the run's eval env, the agent's
episodes recorded, each file written, read back by its runtime and checked against them; only then is
the dir swapped in (a failed check leaves the earlier export as it was)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlexp.errors import ConfigError, one_line_error
from rlexp.files.atomic import replaced_dir
from rlexp.rundir.agents import FINAL, SavedAgent
from rlexp.rundir.contract import EXPORT_DIR

POLICY_FILE = "policy.json"
PARITY_FILE = "parity.json"
RUNNER_FILE = "run_policy.py"  # (this package's own copy is the one written)


class ParityFailed(ConfigError):
    """An exported file does not do what the agent does."""


def default_out(agent: SavedAgent) -> Path:
    return agent.out_dir / (EXPORT_DIR if agent.name == FINAL else f"{EXPORT_DIR}_{agent.name}")


@dataclass
class Exported:
    policy: dict[str, Any]  # policy.json
    parity: dict[str, Any]  # parity.json


def export_agent(
    agent: SavedAgent, formats: list[str], out: Path, episodes: int, quantize: bool, command: str, threads: int
) -> Exported:
    import json

    from rlexp.builders.envs import build_vec_env, closed_at_end
    from rlexp.export.formats import (
        FILES,
        RUNTIME_FILES,
        onnx_runner,
        quantize_int8,
        torchscript_runner,
        write_onnx,
        write_torchscript,
    )
    from rlexp.export.graph import build_graph
    from rlexp.export.metadata import EXPORT_PACKAGES, policy_record
    from rlexp.export.parity import TOLERANCE, compare, failure, record
    from rlexp.loading.agent import load_saved_agent
    from rlexp.rundir.provenance import package_versions

    cfg = agent.cfg
    with closed_at_end(
        build_vec_env(cfg.env, cfg.seed, None, agent.stats, for_eval=True, n_envs=1, in_process=True, trust=agent.trust)
    ) as venv:
        # (on the CPU: the files run anywhere; the graph's constants too)
        model = load_saved_agent(agent, device="cpu", plays=venv)
        graph = build_graph(model, venv)
        seed = agent.episode_seed(None)
        recording = record(model, venv, graph, episodes, seed)
    files: dict[str, str] = {}
    checks: dict[str, dict[str, Any]] = {}
    opset = None
    with replaced_dir(out) as staging:
        if "onnx" in formats:
            files["onnx"] = FILES["onnx"]
            opset = write_onnx(graph, staging / FILES["onnx"])
            checks["onnxruntime"] = compare(onnx_runner(staging / FILES["onnx"], threads), recording, graph)
        if "torchscript" in formats:
            files["torchscript"] = FILES["torchscript"]
            write_torchscript(graph, staging / FILES["torchscript"])
            checks["torch.jit.load"] = compare(torchscript_runner(staging / FILES["torchscript"]), recording, graph)
        if quantize:  # reported, not required: a quantizer that fails says so in parity.json
            try:
                quantize_int8(staging / FILES["onnx"], staging / FILES["int8"])
                runner = onnx_runner(staging / FILES["int8"], threads)
                checks["onnxruntime_int8"] = compare(runner, recording, graph, required=False)
                files["int8"] = FILES["int8"]
            except Exception as err:
                (staging / FILES["int8"]).unlink(missing_ok=True)
                checks["onnxruntime_int8"] = {"error": one_line_error(err)[:400], "required": False, "passed": False}
        for name, result in checks.items():
            if result["required"] and not result["passed"]:
                raise ParityFailed(failure(f"{FILES[RUNTIME_FILES[name]]} run by {name}", result))
        parity = {
            "agent": agent.name,
            "model": str(agent.model.resolve()),
            "episodes": len(recording.returns),
            "observations": recording.steps,
            "seed": seed,
            "sb3_mean_return": sum(recording.returns) / len(recording.returns) if recording.returns else None,
            "tolerance": {"continuous": TOLERANCE, "discrete": "equal"},
            "checks": checks,
            "versions": package_versions(EXPORT_PACKAGES),
        }
        if "onnx" in formats:  # what runs the ONNX file without torch, next to it
            (staging / RUNNER_FILE).write_text((Path(__file__).parent / RUNNER_FILE).read_text())
        policy = policy_record(agent, graph, files, opset, command)
        (staging / POLICY_FILE).write_text(json.dumps(policy, indent=2) + "\n")
        (staging / PARITY_FILE).write_text(json.dumps(parity, indent=2) + "\n")
    return Exported(policy, parity)
