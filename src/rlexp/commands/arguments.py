"""Arguments the verbs share: whole numbers with a floor, the saved agent to run, and the parsers that
turn a bad argument into one line (the command) or a ConfigError (the Python API)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import NoReturn

from rlexp.errors import ConfigError


class OneLineParser(argparse.ArgumentParser):
    """argparse with the training command's error style: one line, exit 1."""

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        sys.exit(1)


def _whole_number(least: int, why: str = "") -> Callable[[str], int]:
    """An argparse type: a whole number >= ``least``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < least:
            raise argparse.ArgumentTypeError(f"{text} must be >= {least}{why}")
        return value

    return parse


seed_int = _whole_number(0, " (Gymnasium takes no negative seed)")
nonnegative_int = _whole_number(0)
positive_int = _whole_number(1)


def add_agent_arguments(parser: argparse.ArgumentParser, episodes: int, verb: str) -> None:
    """The arguments of the commands that run a saved agent: which agent, how many episodes, how."""
    parser.add_argument(
        "run",
        help="a run dir (also a search trial's or a SLURM job's) or an RL Zoo log folder (logs/<algo>/<EnvId>_<n>), or a model .zip in one",
    )
    parser.add_argument("--agent", default="final", help="final (default), best, or step_<N>: a checkpoint")
    parser.add_argument("--episodes", type=positive_int, default=episodes, help=f"episodes to {verb} ({episodes})")
    parser.add_argument("--seed", type=seed_int, help="seed of the first episode (default: the run's seed + 10000)")
    parser.add_argument("--stochastic", action="store_true", help="sample actions (default: the run's setting)")
    add_trust_argument(parser)


def add_trust_argument(parser: argparse.ArgumentParser) -> None:
    """--trust PKG: a package whose code the run's config may name (rlexp.rundir.trust), repeatable."""
    parser.add_argument(
        "--trust",
        action="append",
        default=[],
        metavar="PKG",
        help="a package the run's config may name code of, beyond rlexp's allow-list (repeat, or PKG1,PKG2; "
        "also RLEXP_TRUST): only for runs whose author you trust",
    )


class RaisingParser(argparse.ArgumentParser):
    """The verb's parser for the Python API: a bad argument raises ConfigError instead of exiting."""

    def error(self, message: str) -> NoReturn:
        raise ConfigError(f"{self.prog}: {message}")
