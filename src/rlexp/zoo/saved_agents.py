"""The agent a command reads (``rlexp evaluate``, ``video``, ``export``; ``Run.load_agent``), from any path that
holds one as rlexp.zoo.path_kinds names it: an rlexp run dir, a model zip in one, an RL Zoo log folder or a
zip in it. A zoo run's config passes the same allow-list as a stranger's rlexp run before anything is built,
and an agent whose env id no longer builds plays the env that replaces it (rlexp.zoo.moves)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from rlexp.config.env_families import family_of
from rlexp.config.env_routing import preset_wrappers
from rlexp.errors import ConfigError
from rlexp.lifecycle.state import unfinished
from rlexp.rundir import agents as rlexp_agents
from rlexp.rundir.agents import FINAL, SavedAgent
from rlexp.rundir.contract import VECNORMALIZE_FILE
from rlexp.rundir.record import read_record
from rlexp.rundir.trust import check_trusted
from rlexp.zoo.log_folders import ARGS_FILE, CONFIG_FILE, zoo_config, zoo_config_dict
from rlexp.zoo.moves import moved_env
from rlexp.zoo.path_kinds import what_is


def _move_env(raw: dict[str, Any], model: Path, stats: Path | None, trust: Iterable[str]) -> str | None:
    """Where the agent's env id no longer builds, ``raw`` (a zoo_config_dict) gets the env it plays instead
    (rlexp.zoo.moves), with that env's family and rlexp's own wrappers; returns the line that says so."""
    env = raw["env"]
    if ":" in env["id"]:  # (a package's env: built as it is)
        return None
    variance = None
    if stats is not None:
        from rlexp.rundir.pickles import restricted_loads

        rms = getattr(restricted_loads(stats.read_bytes(), str(stats), trust), "obs_rms", None)
        variance = getattr(rms, "var", None)  # (a dict of them for dict observations: not read)
    move = moved_env(env["id"], dict(env["kwargs"]), _observed_shape(model, trust), variance)
    if move is None:
        return None
    family = family_of(move.env_id)
    env.update(id=move.env_id, kwargs=move.kwargs, family=family.name if family else None)
    own = {k: v for k, v in preset_wrappers(move.env_id).items() if str(v.get("_target_", "")).startswith("rlexp.")}
    env["wrappers"] = {**env.get("wrappers", {}), **own, **move.wrappers}
    return move.line


def _observed_shape(zip_path: Path, trust: Iterable[str]) -> tuple[int, ...] | None:
    """The shape of the agent's observations (a Box's; None otherwise), its space read with the allow-list."""
    import base64
    import json
    import zipfile

    from gymnasium import spaces

    from rlexp.rundir.pickles import restricted_loads

    try:
        with zipfile.ZipFile(zip_path) as archive:
            blob = json.loads(archive.read("data"))["observation_space"][":serialized:"]
        data = base64.b64decode(blob, validate=True)
    except Exception:  # (not a model zip, or a damaged one: loading it says why, in one line)
        return None
    space = restricted_loads(data, f"{zip_path} (observation_space)", trust)
    return tuple(space.shape) if isinstance(space, spaces.Box) else None


def open_agent(path: str, agent: str = FINAL, trust: Iterable[str] = ()) -> SavedAgent:
    """The agent ``agent`` of an rlexp run dir (rlexp.rundir.agents.open_agent) or of an RL Zoo log folder, or
    the model ``path`` (a .zip in either): for the commands that read runs. A zoo run's config passes the same
    allow-list as a stranger's rlexp run, unless ``trust`` names its package."""
    p = Path(path).expanduser()
    zoo = what_is(p).zoo  # (ZOO's alone)
    if zoo is None:
        try:
            return rlexp_agents.open_agent(path, agent, trust)
        except rlexp_agents.NoSuchAgent as err:  # a run that died before it saved it: how it goes on
            record = read_record(err.run_dir)
            left = None if record is None else unfinished(record, err.run_dir)
            if left is None:
                raise
            raise ConfigError(f"{err}; {left}") from None
    name = zoo.agent_of_zip(p) if p.is_file() else agent
    agents = zoo.agents()
    if name not in agents:
        have = ", ".join(agents) or "none"
        raise ConfigError(f"--agent {name}: the RL Zoo run {zoo.folder} has no such agent (it has: {have})")
    model, stats = agents[name]
    raw = zoo_config_dict(zoo)
    # (before anything is built) the env id, its packages and kwargs are args.yml's, the rest config.yml's
    from_args = {"env": {"id": raw["env"]["id"], "kwargs": raw["env"]["kwargs"]}}
    check_trusted(from_args, zoo.folder, trust, source=zoo.files_dir / ARGS_FILE)
    check_trusted(raw, zoo.folder, trust, source=zoo.files_dir / CONFIG_FILE)
    line = _move_env(raw, model, stats, trust)
    if line:
        print(f"rlexp: {line}", flush=True)
    cfg = zoo_config(zoo, raw)
    if cfg.env.normalize and stats is None:
        raise ConfigError(f"{zoo.files_dir}: no {VECNORMALIZE_FILE}, though the zoo's config normalizes")
    # (the zoo evaluates and plays on one env, as rlexp's runs of earlier releases did)
    return SavedAgent(name, model, stats, cfg, zoo.folder, batched_final_eval=False, trust=tuple(trust))
