"""rlexp: declarative reinforcement-learning experiments (Hydra configs -> Stable-Baselines3 runs)."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("rlexp")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0+unknown"
