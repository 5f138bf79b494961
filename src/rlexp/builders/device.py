"""The torch device a run trains on: a ``device=`` checked before a run dir exists, and what ``auto`` picks."""

from __future__ import annotations

from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm

from rlexp.builders.backends import algo_class, is_sbx
from rlexp.config.schema import AlgoConfig, Backend
from rlexp.errors import ConfigError


def check_device(device: str, here: bool = True) -> None:
    """``auto``, ``cpu``, ``cuda[:N]`` or ``mps``; ``here``: and present on this machine (not asked where
    the jobs run elsewhere, e.g. a GPU SLURM job submitted from a login node)."""
    import torch

    if device == "auto":
        return
    try:
        dev = torch.device(device)
    except RuntimeError:
        dev = None
    if dev is None or dev.type not in ("cpu", "cuda", "mps"):
        raise ConfigError(f"device={device}: not a device; choose auto, cpu, cuda, cuda:N or mps")
    if not here:
        return
    present = ["cpu"] + [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    if torch.backends.mps.is_available():
        present.append("mps")
    wanted = f"{dev.type}:{dev.index or 0}" if dev.type == "cuda" else dev.type
    if wanted not in present:
        raise ConfigError(f"device={device}: not available on this machine (present: {', '.join(present)})")


def resolve_device(device: str, algo: AlgoConfig, backend: Backend | str) -> str:
    """The torch device of ``device`` (the config's) for ``algo``: ``auto`` keeps MLP policies of on-policy
    algorithms on the CPU, where they run faster."""
    if device != "auto":
        return device
    if is_sbx(backend):  # JAX places the networks itself; SB3's part (buffers) stays on the CPU
        return "cpu"
    cls = algo_class(algo, backend, None)  # (sb3: no JAX to start, whatever torch_threads)
    if issubclass(cls, OffPolicyAlgorithm) or algo.policy.startswith("Cnn"):
        return "auto"
    return "cpu"
