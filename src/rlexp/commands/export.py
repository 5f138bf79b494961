"""Export a saved agent to ONNX and TorchScript: raw env observations in, env actions out, with the run's
VecNormalize normalization, image scaling and action unsquashing or clipping inside the graph, and a
dynamic batch axis. Frame stacking stays outside (the input is the stacked observation).

Every file is checked before the export is kept: the agent plays --check-episodes episodes of the run's
eval env, and each file, run by onnxruntime or torch.jit.load on the recorded observations, must give
its actions (equal for discrete ones, within 1e-5 for continuous ones). Writes ``<run>/export/`` (for
another agent than the final one ``<run>/export_<agent>/``): policy.onnx, policy.pt, policy.json (how
to run it) and parity.json (the check). ONNX needs the ``export`` extra: pip install 'rlexp[export]'.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from rlexp.commands.arguments import add_trust_argument, positive_int
from rlexp.errors import ConfigError

if TYPE_CHECKING:  # SB3 and torch: loaded once the arguments are good
    from rlexp.export.export_agent import Exported
    from rlexp.rundir.agents import SavedAgent

CHOICES = ("onnx", "torchscript", "all")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run", help="a run dir (also a search trial's or a SLURM job's), or a model .zip in one")
    parser.add_argument("--agent", default="final", help="final (default), best, or step_<N>: a checkpoint")
    add_trust_argument(parser)
    parser.add_argument("--format", choices=CHOICES, default="all", help="onnx, torchscript or all (default)")
    parser.add_argument("--out", type=Path, help="the export's dir (default <run>/export), replaced whole")
    parser.add_argument(
        "--check-episodes", type=positive_int, default=5, help="episodes recorded for the parity check (5)"
    )
    parser.add_argument(
        "--quantize",
        choices=("int8",),
        help="also write policy.int8.onnx (onnxruntime dynamic quantization; its parity is reported, not required)",
    )


def main(args: argparse.Namespace) -> int:
    agent, out, done = export(args, sys.argv[2:])
    parity, policy = done.parity, done.policy
    print(
        f"rlexp: exported the {agent.name} agent ({policy['algo_class'].rsplit('.', 1)[-1]} on {policy['env']['id']}) "
        f"to {out}, checked on {parity['observations']:,} observations of {parity['episodes']} episodes"
    )
    from rlexp.export.export_agent import PARITY_FILE, POLICY_FILE, RUNNER_FILE
    from rlexp.export.formats import FILES, RUNTIME_FILES

    for runtime, check in parity["checks"].items():
        file = FILES[RUNTIME_FILES[runtime]]
        if "error" in check:  # (only the reported int8 check may fail and leave the export standing)
            print(f"  {file:<17} {runtime:<17} not written: {check['error']}")
            continue
        diffs = ", ".join(_difference(name, row) for name, row in check["outputs"].items())
        verdict = ("matches" if check["passed"] else "differs") + ("" if check["required"] else " (reported only)")
        print(f"  {file:<17} {runtime:<17} {verdict}: {diffs}")
    runner = f"python {out / RUNNER_FILE} (no torch); " if (out / RUNNER_FILE).is_file() else ""
    print(f"  how to run it: {runner}{out / POLICY_FILE}; the check: {out / PARITY_FILE}")
    return 0


def export(args: argparse.Namespace, argv: list[str]) -> tuple[SavedAgent, Path, Exported]:
    """Exports and checks the agent; returns it, the export's dir and what was written. ``argv``: the
    command's arguments, recorded in policy.json as the command that makes the export again."""
    formats = ["onnx", "torchscript"] if args.format == "all" else [args.format]
    if args.quantize and "onnx" not in formats:
        raise ConfigError(f"--quantize {args.quantize} quantizes the ONNX file: use --format onnx or all")
    from rlexp.files.atomic import check_replaceable
    from rlexp.zoo.saved_agents import open_agent  # (rlexp run dirs and RL Zoo log folders)

    agent = open_agent(args.run, args.agent, args.trust)
    from rlexp.builders.backends import is_sbx

    if is_sbx(agent.cfg.backend):
        raise ConfigError(
            f"{args.run}: trained with backend=sbx, whose JAX networks rlexp cannot export yet "
            "(ONNX and TorchScript export take SB3's torch agents: train with backend=sb3)"
        )
    from rlexp.export.export_agent import POLICY_FILE, default_out, export_agent

    out = check_replaceable(args.out or default_out(agent), [agent.out_dir], POLICY_FILE)
    if "onnx" in formats:
        _need_onnx()
    import torch

    from rlexp.cluster.cpus import job_threads

    threads = job_threads(agent.cfg.torch_threads)
    torch.set_num_threads(threads)
    command = shlex.join(["rlexp", "export", *argv])
    done = export_agent(agent, formats, out, args.check_episodes, bool(args.quantize), command, threads)
    return agent, out, done


def _need_onnx() -> None:
    """Refused before any work when the ``export`` extra is missing."""
    for module in ("onnxruntime", "onnx", "onnxscript"):
        try:
            __import__(module)
        except ImportError:
            raise ConfigError(
                f"rlexp export to ONNX needs the export extra ({module} is missing): pip install 'rlexp[export]'"
                " (or --format torchscript)"
            ) from None


def _difference(name: str, row: dict[str, object]) -> str:
    if "rows_differing" in row:
        return f"{name} {row['agreement']:.2%} equal"
    return f"{name} max |diff| {row['max_abs_diff']:.2g}"
