"""`rlexp <verb> ...`: the commands besides training. Anything that is not a verb goes to the Hydra
training app. The other verbs' modules have ``add_arguments(parser)`` and ``main(args) -> exit
code``, imported only when called, so that `rlexp --help` and training do not pay for them. Check's module
has ``main(argv) -> exit code`` instead (its options and a run's overrides), called by rlexp.cli, which
says its errors as training's."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import NoReturn

from rlexp.commands.arguments import OneLineParser, RaisingParser
from rlexp.errors import ConfigError

VERBS = {
    "check": "check an env (and the config) before training on it",  # (dispatched by rlexp.cli)
    "evaluate": "score an agent over many episodes, with 95% confidence intervals",
    "video": "record an agent's episodes to mp4 or gif",
    "plot": "draw the learning curves of runs on one figure",
    "report": "compare groups of runs over seeds: IQM, bootstrap CIs, tests, curves, tables",
    "export": "export an agent to ONNX and TorchScript, normalization inside, parity-checked",
    "list": "list the tuned (algorithm, env) pairs: env ids, families, budgets, sources",
    "verify": "check a run dir's files against its checksums, and its config and pickles against the allow-list",
}


def verb_arguments(verb: str, args: list[str]) -> argparse.Namespace:
    """``rlexp <verb> <args>``'s arguments, parsed and checked as the command does (rlexp.api calls the
    verbs' functions with them)."""
    parser = RaisingParser(prog=f"rlexp {verb}")
    importlib.import_module(f"rlexp.commands.{verb}").add_arguments(parser)
    return parser.parse_intermixed_args(args)


def is_verb(arg: str) -> bool:
    """A bare word (no ``=``, no leading ``-``, ``+`` or ``~``), which no Hydra override is."""
    return arg.isidentifier()


def run_verb(argv: list[str]) -> NoReturn:
    """Runs ``rlexp <verb> <args>``; an unknown verb is refused with the closest one."""
    verb, args = argv[0], argv[1:]
    if verb == "train":  # RL Zoo's train.py, SB3 scripts
        from rlexp.zoo.flags import zoo_overrides

        overrides = " ".join(zoo_overrides(args) or args)
        print(f"rlexp: error: rlexp trains without a command word: rlexp {overrides}".rstrip(), file=sys.stderr)
        sys.exit(1)
    if verb == "enjoy":  # RL Zoo's enjoy.py
        print(
            "rlexp: error: RL Zoo's enjoy is two commands here: rlexp evaluate RUN scores an agent, rlexp video RUN "
            "records its episodes (RUN: a run dir, or a zoo log folder logs/<algo>/<EnvId>_<n>)",
            file=sys.stderr,
        )
        sys.exit(1)
    if verb not in VERBS:
        from rlexp.config.validation import did_you_mean

        print(
            f"rlexp: error: unknown command {verb!r}{did_you_mean(verb, list(VERBS))}; commands: "
            f"{', '.join(VERBS)} (training takes key=value overrides: rlexp --help)",
            file=sys.stderr,
        )
        sys.exit(1)
    module = importlib.import_module(f"rlexp.commands.{verb}")
    parser = OneLineParser(
        prog=f"rlexp {verb}", description=module.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    module.add_arguments(parser)
    parsed = parser.parse_intermixed_args(args)
    try:
        sys.exit(module.main(parsed))
    except (ConfigError, OSError) as err:
        if os.environ.get("HYDRA_FULL_ERROR") == "1":
            raise
        text = str(err)
        if isinstance(err, OSError):  # (a file name where the error has one: rlexp.files.atomic adds it)
            text = f"{err.filename + ': ' if err.filename else ''}{err.strerror or err} (errno {err.errno})"
        print(f"rlexp {verb}: error: {text}", file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:  # (each file a command writes is swapped in whole: none is left half written)
        if os.environ.get("HYDRA_FULL_ERROR") == "1":
            raise
        print(f"rlexp {verb}: interrupted (Ctrl-C); nothing more written", file=sys.stderr)
        sys.exit(130)
