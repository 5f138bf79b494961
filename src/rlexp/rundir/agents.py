"""The agents a run dir holds (the final one, best/, checkpoints/step_<N>/, resume/): saved whole and
never diverged, checked for damage, and opened for the commands that read runs.

An agent is model.zip with, when used, vecnormalize.pkl and replay_buffer.pkl beside it.
"""

from __future__ import annotations

import os
import re
import shutil
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from omegaconf import DictConfig

from rlexp.errors import ConfigError, one_line_error
from rlexp.files.atomic import atomic_write, fsync_dir, naming_the_path, remove_partial_saves
from rlexp.monitor.evaluation import EVAL_SEED_OFFSET, eval_env_count
from rlexp.rundir.checksums import check_unchanged
from rlexp.rundir.contract import (
    BEST_DIR,
    CHECKPOINT_DIR,
    CHECKPOINT_PREFIX,
    COMPLETED,
    CONFIG_FILE,
    MODEL_FILE,
    REPLAY_BUFFER_FILE,
    SEED_DIR_PREFIX,
    VECNORMALIZE_FILE,
    checkpoint_dir,
    checkpoint_steps,
)
from rlexp.rundir.record import RunRecord, read_record
from rlexp.rundir.trust import read_trusted_config

if TYPE_CHECKING:  # SB3 loads only when an agent is saved: the sweeper and `rlexp --help` stay quick
    from stable_baselines3.common.base_class import BaseAlgorithm


def save_agent(model: BaseAlgorithm, dest_dir: Path, replay_buffer: bool = False) -> None:
    """model.zip (+ vecnormalize.pkl, + replay_buffer.pkl) in ``dest_dir``, each file atomically.

    For the final agent of a run; agents replaced during training go through ``save_agent_dir``. An
    agent whose parameters hold NaN or inf is refused (rlexp.monitor.finite), so that no checkpoint, best
    or resume agent is of a diverged run.
    """
    from rlexp.monitor.finite import check_parameters  # (torch: loaded where an agent is saved, not read)

    check_parameters(model)
    vecnormalize = model.get_vec_normalize_env()
    if vecnormalize is not None:
        atomic_write(dest_dir / VECNORMALIZE_FILE, lambda p: vecnormalize.save(str(p)))
    from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm

    if replay_buffer and isinstance(model, OffPolicyAlgorithm):
        atomic_write(dest_dir / REPLAY_BUFFER_FILE, lambda p: model.save_replay_buffer(p))
    atomic_write(dest_dir / MODEL_FILE, lambda p: model.save(p))


def save_agent_dir(model: BaseAlgorithm, dest_dir: Path, replay_buffer: bool = False) -> None:
    """A whole agent (model, statistics, buffer) in ``dest_dir``, replacing the old one as a unit.

    The new set is written to a hidden sibling and swapped in by renames, so ``dest_dir`` never
    pairs a model with another step's statistics; only between the two renames does the old set
    sit at ``.<name>.old``.
    """
    tmp = dest_dir.with_name(f".{dest_dir.name}.tmp{os.getpid()}")
    old = dest_dir.with_name(f".{dest_dir.name}.old")
    for stale in (tmp, old):
        shutil.rmtree(stale, ignore_errors=True)
    try:
        with naming_the_path(dest_dir):  # (a full disk: said of best/, not of its hidden sibling)
            save_agent(model, tmp, replay_buffer)
            if dest_dir.exists():
                os.replace(dest_dir, old)
            os.replace(tmp, dest_dir)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    shutil.rmtree(old, ignore_errors=True)
    fsync_dir(dest_dir.parent)


def recover_partial_saves(run_dir: Path) -> None:
    """What a kill during a save left anywhere in a run dir: half-written temporaries are dropped, and an
    agent dir (best/, resume/, a checkpoint) whose swap was cut between its two renames (only
    ``.<name>.old`` left) is put back."""
    remove_partial_saves(run_dir, recursive=True)
    for old in sorted([*run_dir.glob(".*.old"), *(run_dir / CHECKPOINT_DIR).glob(f".{CHECKPOINT_PREFIX}*.old")]):
        dest = old.with_name(old.name[1 : -len(".old")])
        if old.is_dir() and not dest.exists():
            os.replace(old, dest)
        else:
            shutil.rmtree(old, ignore_errors=True)


def damage(agent_dir: Path) -> str | None:
    """What makes a saved agent unusable (None when it is intact): a model.zip that fails its checksums, or
    a pickle cut short. rlexp writes agents atomically, so this is a copy, a disk or a file system at fault."""
    model = agent_dir / MODEL_FILE
    try:
        with zipfile.ZipFile(model) as archive:
            bad = archive.testzip()
            if bad is not None or "data" not in archive.namelist():
                return f"{model}: {'bad checksum in ' + bad if bad else 'incomplete (no data member)'}"
    except Exception as err:  # zipfile raises what a damaged header trips over (BadZipFile, zlib.error, ...)
        return f"{model}: {one_line_error(err)}"
    for name in (VECNORMALIZE_FILE, REPLAY_BUFFER_FILE):
        pickled = agent_dir / name
        if pickled.is_file() and not _ends_like_a_pickle(pickled):
            return f"{pickled}: cut short"
    return None


def _ends_like_a_pickle(path: Path) -> bool:
    with open(path, "rb") as f:  # a pickle's last opcode is STOP ("."); a cut file almost never ends so
        f.seek(0, os.SEEK_END)
        if f.tell() == 0:
            return False
        f.seek(-1, os.SEEK_END)
        return f.read(1) == b"."


# the names of a run's agents in the commands that read runs (--agent)
BEST = BEST_DIR  # (the agent in best/)
FINAL = "final"


@dataclass
class SavedAgent:
    """``name``: final, best, step_<N> or the zip's stem; ``out_dir``: where a command writes about it."""

    name: str
    model: Path
    stats: Path | None
    cfg: DictConfig
    out_dir: Path
    batched_final_eval: bool = True
    trust: tuple[str, ...] = ()  # the packages the user trusts it to name (rlexp.rundir.trust)

    def episode_seed(self, seed: int | None) -> int:
        """The first episode's seed: by default the run's final evaluation's (its seed + 10000)."""
        return self.cfg.seed + EVAL_SEED_OFFSET if seed is None else seed

    def eval_envs(self, episodes: int) -> int:
        """Envs side by side for ``episodes`` episodes, as the run's evaluations counted them: so that the
        run's final episodes and seed give its ``final_eval``. A run of an rlexp that evaluated on one env
        (its final_eval records no ``n_envs``) gets one."""
        if not self.batched_final_eval:
            return 1
        return eval_env_count(self.cfg.callbacks.eval, episodes)

    def deterministic(self, stochastic: bool) -> bool:
        return bool(self.cfg.callbacks.eval.deterministic) and not stochastic


def _agents_of(run_dir: Path) -> list[str]:
    found = [FINAL] if (run_dir / MODEL_FILE).is_file() else []
    found += [BEST] if (run_dir / BEST_DIR / MODEL_FILE).is_file() else []
    steps = [step for step, d in checkpoint_steps(run_dir).items() if (d / MODEL_FILE).is_file()]
    return found + [f"{CHECKPOINT_PREFIX}{step}" for step in steps]


def _agent_dir(run_dir: Path, agent: str) -> Path:
    if agent == FINAL:
        return run_dir
    if agent == BEST:
        return run_dir / BEST_DIR
    step = re.fullmatch(rf"{CHECKPOINT_PREFIX}(\d+)", agent)
    if step is None:
        raise ConfigError(f"--agent {agent}: not final, best or step_<N>")
    return checkpoint_dir(run_dir, int(step.group(1)))


def _run_dir_of(path: Path) -> Path | None:
    """The run dir a model zip belongs to (it may sit in best/ or checkpoints/step_<N>/)."""
    for d in (path.parent, path.parent.parent, path.parent.parent.parent):
        if (d / CONFIG_FILE).is_file():
            return d
    return None


class NoSuchAgent(ConfigError):
    """The run dir ``run_dir`` has not saved the agent asked for (a run that died before it did: the
    commands that read runs say how it continues, rlexp.zoo.saved_agents.open_agent)."""

    def __init__(self, run_dir: Path, message: str) -> None:
        super().__init__(message)
        self.run_dir = run_dir


def open_agent(path: str, agent: str = FINAL, trust: Iterable[str] = ()) -> SavedAgent:
    """The agent ``agent`` of the run dir ``path``, or the model ``path`` (a .zip inside a run dir). A run
    whose config names code outside rlexp's allow-list is refused unless ``trust`` (or RLEXP_TRUST) names
    its package (rlexp.rundir.trust)."""
    p = Path(path).expanduser()
    if p.is_file():
        run_dir = _run_dir_of(p)
        if run_dir is None:
            raise ConfigError(f"{path}: no config.yaml next to it or above it (not inside an rlexp run dir)")
        name = FINAL if p.parent == run_dir else p.parent.name if p.stem == "model" else p.stem
        if re.fullmatch(rf"{CHECKPOINT_PREFIX}\d+", name):
            name = f"{CHECKPOINT_PREFIX}{int(name.removeprefix(CHECKPOINT_PREFIX))}"
        return _agent(name, p, run_dir, trust)
    if not p.is_dir():
        raise ConfigError(f"{path}: no such run dir or model .zip")
    if not (p / CONFIG_FILE).is_file():
        seeds = sorted(d.name for d in p.glob(f"{SEED_DIR_PREFIX}*") if (d / CONFIG_FILE).is_file())
        if seeds:
            raise ConfigError(f"{path} is a trial of {len(seeds)} seeds: pass one of its runs ({', '.join(seeds)})")
        raise ConfigError(f"{path}: no config.yaml (not an rlexp run dir)")
    agent_dir = _agent_dir(p, agent)
    if not (agent_dir / MODEL_FILE).is_file():
        have = _agents_of(p)
        raise NoSuchAgent(
            p,
            f"--agent {agent}: {agent_dir / MODEL_FILE} does not exist"
            + (f" (this run has: {', '.join(have)})" if have else " (this run saved no agent yet)"),
        )
    return _agent(agent, agent_dir / MODEL_FILE, p, trust)


def _agent(name: str, model: Path, run_dir: Path, trust: Iterable[str]) -> SavedAgent:
    stats = model.parent / VECNORMALIZE_FILE
    cfg = read_trusted_config(run_dir, trust, remedy="not a run dir of this rlexp?")
    record = read_record(run_dir)
    recorded = record.checksums if record is not None and record.status == COMPLETED else None
    check_unchanged(run_dir, recorded if isinstance(recorded, dict) else None, [run_dir / CONFIG_FILE, model, stats])
    if cfg.env.normalize and not stats.is_file():
        raise ConfigError(f"{model.parent}: no {VECNORMALIZE_FILE}, though the run used env.normalize=true")
    return SavedAgent(
        name, model, stats if stats.is_file() else None, cfg, run_dir, _batched_final_eval(record), tuple(trust)
    )


def _batched_final_eval(record: RunRecord | None) -> bool:
    """Whether the run's final evaluation stepped its envs side by side (recorded as final_eval.n_envs);
    a run that has not finished yet will."""
    final = None if record is None else record.final_eval
    return not isinstance(final, dict) or "n_envs" in final
