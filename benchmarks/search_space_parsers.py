"""rlexp's search-space parser against hydra-optuna-sweeper's, on every entry of rlexp's shipped search
spaces and a few edge cases: the same Optuna distribution, or how they differ (docs/architecture.md, "Hydra
1.3 and 1.4": why rlexp keeps its own). `nox -s search-space-parsers` installs the upstream plugin's 1.4
release candidate for it; it prints, it asserts nothing."""

from __future__ import annotations

from importlib.resources import files

import yaml
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra_plugins.hydra_optuna_sweeper._impl import create_optuna_distribution_from_override as upstream

from rlexp.search.space import _distribution as rlexp_parser

# what the shipped spaces do not hold: list choices, an empty range, a reversed or non-positive log interval,
# the int tag, a float range
EDGES = [
    "algo.policy_kwargs.net_arch=choice([64,64],[256,256])",
    "algo.n_steps=range(32,1024,32)",
    "algo.n_epochs=range(5,5)",
    "algo.learning_rate=interval(0.1,0.01)",
    "algo.learning_rate=tag(log,interval(0,1))",
    "algo.n_epochs=tag(int,interval(1,8))",
    "algo.gamma=range(0.9,0.99,0.01)",
]


def _parsed(parser, line: str) -> str:
    override = OverridesParser.create().parse_overrides([line])[0]
    try:
        return repr(parser(override))
    except BaseException as err:  # (upstream asserts)
        return f"{type(err).__name__}: {err}"


def main() -> None:
    lines = []
    for path in sorted((files("rlexp.conf") / "search_space").iterdir(), key=lambda p: p.name):
        if path.name.endswith(".yaml"):
            lines += [f"{key}={value}" for key, value in yaml.safe_load(path.read_text()).items()]
    shipped = len(lines)
    same = 0
    for i, line in enumerate([*lines, *EDGES]):
        ours, theirs = _parsed(rlexp_parser, line), _parsed(upstream, line)
        if ours == theirs:
            same += 1
            continue
        print(f"{'shipped' if i < shipped else 'edge'}: {line}\n  rlexp:    {ours}\n  upstream: {theirs}")
    print(f"{same} of {shipped + len(EDGES)} the same ({shipped} shipped entries, {len(EDGES)} edge cases)")


if __name__ == "__main__":
    main()
