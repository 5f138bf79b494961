"""`rlexp <verb> ...`: the commands besides training. Anything that is not a verb goes to the Hydra
training app. the other verbs' modules have ``add_arguments(parser)`` and ``main(args) -> exit
code``, imported only when called, so that `rlexp --help` and training start as fast as before; check
runs through the training app itself (rlexp.cli), so that its config is composed exactly as a run's."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable
from typing import NoReturn

from rlexp.errors import ConfigError

VERBS = {
    "check": "check an env (and the config) before training on it",  # runs through the Hydra app (rlexp.cli)
    "evaluate": "score an agent over many episodes, with 95% confidence intervals",
    "video": "record an agent's episodes to mp4 or gif",
    "plot": "draw the learning curves of runs on one figure",
    "report": "compare groups of runs over seeds: IQM, bootstrap CIs, tests, curves, tables",
    "export": "export an agent to ONNX and TorchScript, normalization inside, parity-checked",
}


class _Parser(argparse.ArgumentParser):
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
    parser.add_argument("run", help="a run dir (also a search trial's or a SLURM job's), or a model .zip in one")
    parser.add_argument("--agent", default="final", help="final (default), best, or step_<N>: a checkpoint")
    parser.add_argument("--episodes", type=positive_int, default=episodes, help=f"episodes to {verb} ({episodes})")
    parser.add_argument("--seed", type=seed_int, help="seed of the first episode (default: the run's seed + 10000)")
    parser.add_argument("--stochastic", action="store_true", help="sample actions (default: the run's setting)")


class _RaisingParser(argparse.ArgumentParser):
    """The verb's parser for the Python API: a bad argument raises ConfigError instead of exiting."""

    def error(self, message: str) -> NoReturn:
        raise ConfigError(f"{self.prog}: {message}")


def verb_arguments(verb: str, args: list[str]) -> argparse.Namespace:
    """``rlexp <verb> <args>``'s arguments, parsed and checked as the command does (rlexp.api calls the
    verbs' functions with them)."""
    parser = _RaisingParser(prog=f"rlexp {verb}")
    importlib.import_module(f"rlexp.commands.{verb}").add_arguments(parser)
    return parser.parse_args(args)


def is_verb(arg: str) -> bool:
    """A bare word (no ``=``, no leading ``-``, ``+`` or ``~``), which no Hydra override is."""
    return arg.isidentifier()


def run_verb(argv: list[str]) -> NoReturn:
    """Runs ``rlexp <verb> <args>``; an unknown verb is refused with the closest one."""
    verb, args = argv[0], argv[1:]
    if verb not in VERBS:
        from rlexp.schema import did_you_mean

        print(
            f"rlexp: error: unknown command {verb!r}{did_you_mean(verb, list(VERBS))}; commands: "
            f"{', '.join(VERBS)} (training takes key=value overrides: rlexp --help)",
            file=sys.stderr,
        )
        sys.exit(1)
    module = importlib.import_module(f"rlexp.commands.{verb}")
    parser = _Parser(
        prog=f"rlexp {verb}", description=module.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    module.add_arguments(parser)
    parsed = parser.parse_args(args)
    try:
        sys.exit(module.main(parsed))
    except (ConfigError, OSError) as err:
        if os.environ.get("HYDRA_FULL_ERROR") == "1":
            raise
        text = f"{err.filename}: {err.strerror} (errno {err.errno})" if isinstance(err, OSError) else str(err)
        print(f"rlexp {verb}: error: {text}", file=sys.stderr)
        sys.exit(1)
