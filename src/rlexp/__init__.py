"""rlexp: declarative reinforcement-learning experiments (Hydra configs -> Stable-Baselines3 runs).

From Python: ``rlexp.compose``, ``rlexp.train``, ``rlexp.load_run``, ``rlexp.report`` (rlexp.api), loaded
on first use, so that the command does not pay for the API's imports."""

from importlib.metadata import PackageNotFoundError, version
from typing import Any

try:
    __version__ = version("rlexp")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0+unknown"

_API = ("ConfigError", "Run", "compose", "load_run", "report", "train")
__all__ = ["__version__", *_API]


def __getattr__(name: str) -> Any:
    if name in _API:
        from rlexp import api

        return getattr(api, name)
    raise AttributeError(f"module 'rlexp' has no attribute {name!r}")
