"""Is a run dir what its run wrote, and what would opening it run? Its status comes first (a run whose
process died says so, and the command that continues it); then each file whose checksum the run recorded
(its config and its agents' files: summary.json ``checksums``) is compared with it, and the config's
callables and the agents' pickles are checked against rlexp's allow-list (--trust adds packages),
without building or unpickling anything outside it. Exit 0 when all is as written and allowed, 1
otherwise.

  rlexp verify outputs/ppo-cartpole/2026-12-05_10-00-00
  rlexp verify downloaded/run --trust my_envs
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rlexp.commands.arguments import add_trust_argument
from rlexp.errors import ConfigError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run", type=Path, help="a run dir")
    add_trust_argument(parser)


def main(args: argparse.Namespace) -> int:
    from rlexp.lifecycle.state import status_now, unfinished
    from rlexp.rundir.checksums import changed, recorded_files
    from rlexp.rundir.contract import CONFIG_FILE, MODEL_FILE, VECNORMALIZE_FILE, read_config_dict
    from rlexp.rundir.pickles import model_objects, restricted_loads
    from rlexp.rundir.record import RunRecord, read_record
    from rlexp.rundir.trust import trusted_packages, untrusted
    from rlexp.zoo.path_kinds import what_is

    run_dir: Path = args.run
    if not what_is(run_dir).configured:
        raise ConfigError(f"{run_dir}: no {CONFIG_FILE} (not an rlexp run dir)")
    record = read_record(run_dir) or RunRecord()
    recorded = record.checksums if isinstance(record.checksums, dict) else {}
    problems = 0
    print(f"rlexp verify: {run_dir}")
    if record.status:
        left = unfinished(record, run_dir)
        print(f"  status: {status_now(record, run_dir)}" + (f"; {left}" if left is not None else ""))
    names = sorted({p.relative_to(run_dir).as_posix() for p in recorded_files(run_dir)} | set(recorded))
    for name in names:
        path = run_dir / name
        if not path.is_file():
            state, problems = "missing (recorded, not there)", problems + 1
        elif name not in recorded:
            state = "not recorded (the run has not completed, or an earlier release wrote it)"
        elif changed(run_dir, recorded, [path]):
            state, problems = "CHANGED since the run wrote it", problems + 1
        else:
            state = "as written"
        print(f"  {name:<40} {state}")
    trusted = trusted_packages(args.trust)
    try:
        config = read_config_dict(run_dir)
    except Exception as err:  # not YAML, not a mapping
        raise ConfigError(f"{run_dir / CONFIG_FILE}: unreadable ({type(err).__name__})") from None
    refused = untrusted(config, trusted)
    for key, name in refused:
        why = (
            "an interpolation, which rlexp never writes"
            if "${" in name
            else f"not on the allow-list (--trust {name.split('.')[0]})"
        )
        print(f"  {CONFIG_FILE}: {key} names {name[:80]}: {why}")
    problems += len(refused)
    if not refused:
        print(f"  {CONFIG_FILE}: names only allowed code")
    for name in names:
        path = run_dir / name
        if not path.is_file() or path.name not in (MODEL_FILE, VECNORMALIZE_FILE):
            continue
        if path.name == MODEL_FILE and record.backend == "sbx":
            print(f"  {name}: an sbx agent pickles its JAX policy whole: opens only with --trust sbx")
            continue
        try:
            model_objects(path, args.trust) if path.name == MODEL_FILE else restricted_loads(
                path.read_bytes(), str(path), args.trust
            )
        except ConfigError as err:
            print(f"  {name}: {str(err).split(': ', 1)[1]}")
            problems += 1
    print(f"rlexp verify: {'as written and allowed' if not problems else f'{problems} problem(s)'}")
    return 0 if not problems else 1
