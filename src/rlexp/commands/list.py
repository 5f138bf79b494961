"""List the tuned (algorithm, env) pairs rlexp ships: the algorithm, the env preset and the id it builds,
the env family (and so the extra that installs it), the budget, and where the values come from (RL Zoo's
entry, or the keys where rlexp departs from it).

    rlexp list                       # every pair
    rlexp list --algo sac --family mujoco
    rlexp list --env hopper          # a preset's name or an env id, in part
"""

from __future__ import annotations

import argparse
import importlib.util

from rlexp.config.env_families import BY_NAME, Family
from rlexp.errors import ConfigError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--algo", help="only this algorithm's pairs (ppo, sac, ...)")
    parser.add_argument("--env", help="only envs whose preset name or env id contains this text")
    parser.add_argument("--family", help=f"only this env family ({', '.join(BY_NAME)})")


def main(args: argparse.Namespace) -> int:
    from rlexp.config.tuned import tuned_pairs
    from rlexp.config.validation import did_you_mean

    pairs = tuned_pairs()
    if args.algo is not None and args.algo not in {p.algo for p in pairs}:
        known = sorted({p.algo for p in pairs})
        raise ConfigError(
            f"--algo {args.algo}: no tuned pairs{did_you_mean(args.algo, known)} (algorithms: {', '.join(known)})"
        )
    if args.family is not None and args.family not in BY_NAME:
        raise ConfigError(
            f"--family {args.family}: unknown family{did_you_mean(args.family, list(BY_NAME))} (families: {', '.join(BY_NAME)})"
        )
    text = (args.env or "").lower()
    preset = None
    if args.env:  # an id rlexp routes to a preset (Hopper-v4, ALE/Breakout-v5) lists that preset's pairs
        from rlexp.config.env_routing import preset_for

        preset = preset_for(args.env)
    chosen = [
        p
        for p in pairs
        if (args.algo is None or p.algo == args.algo)
        and (args.family is None or p.family == args.family)
        and (p.env == preset or text in p.env.lower() or text in p.env_id.lower())
    ]
    if not chosen:
        print("rlexp list: no tuned pair matches (rlexp list shows them all)")
        return 1
    rows = [("algo", "env", "env id", "family", "n_timesteps", "source")]
    for p in chosen:
        source = p.source or "rlexp"
        if p.departures:
            source += f"; departs: {', '.join(p.departures)}"
        family = BY_NAME.get(p.family)
        # (a file tuned for a whole family names the family as its env id: "any Atari game")
        env_id = family.any_id if family is not None and family.any_id and p.env_id == family.name else p.env_id
        rows.append((p.algo, p.env, env_id, p.family, f"{p.n_timesteps:,}", source))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=False)) + "  " + row[-1])
    families = sorted({p.family for p in chosen})
    not_installed = [BY_NAME[f] for f in families if f in BY_NAME and not _installed(BY_NAME[f])]
    missing = sorted({f.extra for f in not_installed if f.extra is not None})  # (no extra: always installed)
    count = sum(p.family in BY_NAME and BY_NAME[p.family].extra in missing for p in chosen)
    print(
        f"rlexp list: {len(chosen)} tuned pairs"
        + (
            f"; {count} of them need extras not installed here: pip install 'rlexp[{','.join(missing)}]'"
            if missing
            else ""
        )
    )
    return 0


def _installed(family: Family) -> bool:
    """Whether the family's extra is installed: its package (MuJoCo's simulator, for Gymnasium's own ids)."""
    if family.extra is None:
        return True
    return importlib.util.find_spec(family.module or family.extra) is not None
