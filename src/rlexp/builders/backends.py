"""Which library trains the algorithm: SB3 on torch (``backend=sb3``) or sbx on JAX (``backend=sbx``).

sbx offers SB3's API (same VecEnvs, buffers, callbacks, logger and zip files) with JAX networks; a run
takes the same config keys. What sbx does not take, or takes with another meaning, is refused here in
one line naming the key, unless it is left at SB3's default (then there is nothing to honour).
"""

from __future__ import annotations

import inspect
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omegaconf import DictConfig

from rlexp.builders.schedules import CONSTANT
from rlexp.cluster.cpus import job_threads
from rlexp.config.algorithms import ALGORITHMS, by_target
from rlexp.config.schema import AlgoConfig, Backend
from rlexp.errors import ConfigError, one_line_error

if TYPE_CHECKING:
    from stable_baselines3.common.base_class import BaseAlgorithm

JAX_CACHE_BYTES = 1 << 30  # compiled programs kept between runs (a SAC run's are ~0.6 MB)
SB3 = "sb3"
SBX = "sbx"
# torch activation classes (policy_kwargs.activation_fn) and the flax functions sbx's networks take
FLAX_ACTIVATIONS = {
    "ReLU": "relu",
    "Tanh": "tanh",
    "ELU": "elu",
    "LeakyReLU": "leaky_relu",
    "GELU": "gelu",
    "SiLU": "silu",
    "Sigmoid": "sigmoid",
    "SELU": "selu",
    "Softplus": "softplus",
}


def is_sbx(backend: Backend | str) -> bool:
    """Whether ``backend`` (the config's) trains with sbx."""
    return getattr(backend, "value", backend) == SBX


def algo_target(algo: AlgoConfig, backend: Backend | str) -> str:
    """The dotted name of the class that trains ``algo`` under ``backend`` (summary.json's algo_class)."""
    if not is_sbx(backend):
        return str(algo._target_)
    algorithm = by_target(str(algo._target_))
    if algorithm is None or algorithm.sbx is None:
        name = str(algo._target_).rsplit(".", 1)[-1]
        names = ", ".join(a.name for a in ALGORITHMS if a.sbx is not None)
        raise ConfigError(f"backend=sbx: sbx has no {name} (it trains {names}); use backend=sb3")
    return algorithm.sbx


def algo_class(algo: AlgoConfig, backend: Backend | str, torch_threads: int | None) -> type[BaseAlgorithm]:
    """The class that trains: the algo config's SB3 class, or its sbx counterpart under backend=sbx (JAX
    started for the job's ``torch_threads``)."""
    from hydra.utils import get_class
    from stable_baselines3.common.base_class import BaseAlgorithm

    target = algo_target(algo, backend)
    if is_sbx(backend):
        import_sbx(job_threads(torch_threads))
    try:
        cls = get_class(target)
    except Exception as err:
        raise ConfigError(f"algo._target_={target}: {one_line_error(err)}") from None
    if not (isinstance(cls, type) and issubclass(cls, BaseAlgorithm)):
        raise ConfigError(f"algo._target_={target} is not an SB3 algorithm class")
    return cls


def import_sbx(threads: int) -> None:
    """Imports sbx (and JAX) once: JAX's CPU matrix products on one thread when the job has one CPU (XLA
    reads its flags when JAX starts), and JAX's persistent compilation cache on, so that a run after the
    first skips compiling its networks and updates (seconds per run). Without the extra: one line."""
    first = "jax" not in sys.modules
    if first and threads <= 1 and "xla_cpu_multi_thread_eigen" not in os.environ.get("XLA_FLAGS", ""):
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false").strip()
    # JAX logs a warning for each accelerator it does not find (TPU, CUDA) on a CPU machine
    logging.getLogger("jax._src.xla_bridge").setLevel(logging.ERROR)
    try:
        import jax
        import sbx  # noqa: F401
    except ImportError as err:
        raise ConfigError(f"backend=sbx needs the sbx extra: pip install 'rlexp[sbx]' ({err})") from None
    # (unless JAX_COMPILATION_CACHE_DIR chose another)
    if first and jax.config.jax_compilation_cache_dir is None:  # type: ignore[attr-defined]  # (jax's stubs lack its config flags)
        jax.config.update("jax_compilation_cache_dir", str(jax_cache_dir()))
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)  # small programs are most of them
        jax.config.update("jax_compilation_cache_max_size", JAX_CACHE_BYTES)  # the least recently used go


def jax_cache_dir() -> Path:
    """Where JAX keeps compiled programs between runs: $XDG_CACHE_HOME/rlexp/jax (~/.cache/rlexp/jax)."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "rlexp" / "jax"


def sbx_keywords(algo: AlgoConfig, cls: type, keywords: dict[str, Any]) -> dict[str, Any]:
    """The constructor keywords of ``algo``'s SB3 class, as the sbx class ``cls`` takes them."""
    from hydra.utils import get_class

    takes = inspect.signature(cls).parameters
    sb3_defaults = {k: p.default for k, p in inspect.signature(get_class(algo._target_)).parameters.items()}
    name = cls.__name__
    algorithm = by_target(str(algo._target_))
    refused = algorithm.sbx_refuses if algorithm is not None else {}
    out: dict[str, Any] = {}
    for key, value in keywords.items():
        if key in takes:
            out[key] = value
        elif value != sb3_defaults.get(key, inspect.Parameter.empty):
            raise ConfigError(
                f"algo.{key}={value}: sbx's {name} does not take {key} (backend=sbx; SB3's default "
                f"{sb3_defaults.get(key)!r} or backend=sb3)"
            )
    for key, why in refused.items():
        if out.get(key) is not None:
            raise ConfigError(f"algo.{key}={out[key]}: {why} (backend=sbx; null or backend=sb3)")
    if out.get("use_sde"):
        raise ConfigError(f"algo.use_sde=true: sbx's {name} has no gSDE (backend=sbx; false or backend=sb3)")
    sb3_policy = dict(algorithm.sbx_policy_defaults) if algorithm is not None else {}
    out["policy_kwargs"] = _flax_policy_kwargs(name, {**sb3_policy, **(out.get("policy_kwargs") or {})})
    return out


def _flax_policy_kwargs(name: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    """policy_kwargs for sbx (SB3's defaults filled in where sbx's differ): a torch activation class becomes
    its flax function."""
    activation = kwargs.get("activation_fn")
    if activation is not None:
        import flax.linen as nn

        flax_name = FLAX_ACTIVATIONS.get(getattr(activation, "__name__", ""))
        if isinstance(activation, type) and flax_name is None:
            raise ConfigError(
                f"algo.policy_kwargs.activation_fn={activation.__name__}: no flax counterpart known to rlexp "
                f"(backend=sbx takes {', '.join(FLAX_ACTIVATIONS)})"
            )
        if flax_name is not None:
            kwargs["activation_fn"] = getattr(nn, flax_name)
    net_arch = kwargs.get("net_arch")
    if name == "DQN" and not (isinstance(net_arch, list) and len(net_arch) == 2 and net_arch[0] == net_arch[1]):
        raise ConfigError(
            f"algo.policy_kwargs.net_arch={net_arch}: sbx's DQN builds two hidden layers of one width "
            "(backend=sbx; e.g. [256, 256])"
        )
    return kwargs


def check_sbx_schedule(lr_schedule: DictConfig, target: str) -> None:
    """sbx's TD3, DDPG, CrossQ and DQN keep their first learning rate (``sbx_constant_lr`` of their entry): a
    schedule (``lr_schedule``, the config's) is refused, not ignored."""
    constant = any(a.sbx == target and a.sbx_constant_lr for a in ALGORITHMS)
    if constant and lr_schedule._target_ != CONSTANT:
        raise ConfigError(
            f"lr_schedule: sbx's {target.rsplit('.', 1)[-1]} keeps its learning rate constant "
            "(backend=sbx; schedule@lr_schedule=constant or backend=sb3)"
        )


def check_sbx_device(device: str) -> None:
    """``device`` (the config's) left to JAX."""
    if device != "auto":
        raise ConfigError(
            f"device={device}: with backend=sbx, JAX chooses the device (its CUDA build on a GPU machine; "
            "JAX_PLATFORMS=cpu for the CPU); leave device=auto"
        )


def jax_device() -> str:
    """Where JAX computes (summary.json's device for backend=sbx)."""
    import jax

    return f"jax:{jax.default_backend()}"
