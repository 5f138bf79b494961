"""The run-dir contract: every name a run writes, and the readers and writers of its record files.

Training writes a run dir; every other command reads it. This module is the one place that spells the
names, so that the writer and its readers cannot drift apart; the contract only grows (runs written by
earlier releases stay readable: a key added since takes its default).

    RUN/
      config.yaml, command.txt          the composed config as used, the command that re-runs it
      summary.json                      status, provenance, steps, scores, warnings (rlexp.rundir.record)
      model.zip, vecnormalize.pkl,      the final agent (statistics and replay buffer when used/asked)
        replay_buffer.pkl
      best/ (+ best.json)               the best agent of the periodic evaluations, and that evaluation
      checkpoints/step_<N>/             complete agents every callbacks.checkpoint.freq steps
      resume/                           the agent of a run stopped by a signal
      evaluations.npz                   the periodic evaluations (RL Zoo's format)
      monitor/{train,eval,final}/       episode logs of training, periodic and final evaluations
      logs/                             progress.csv and TensorBoard events
      curves.png                        the learning curves
      trial.json                        a search trial's seeds and their final scores (several seeds)
      .rlexp.lock                       held by the run's process while it runs
    outputs/<algo>-<env>/latest         a link to the newest run there (rlexp.rundir.latest); multirun/latest
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from omegaconf import DictConfig, OmegaConf

from rlexp.errors import ConfigError, collapsed, one_line_error
from rlexp.files.atomic import atomic_write_json, atomic_write_text

log = logging.getLogger(__name__)

CONFIG_FILE = "config.yaml"
COMMAND_FILE = "command.txt"
SUMMARY_FILE = "summary.json"
MODEL_FILE = "model.zip"
VECNORMALIZE_FILE = "vecnormalize.pkl"
REPLAY_BUFFER_FILE = "replay_buffer.pkl"
BEST_DIR = "best"
BEST_FILE = "best.json"  # the evaluation that made best/ the best, next to its agent
CHECKPOINT_DIR = "checkpoints"
CHECKPOINT_PREFIX = "step_"
RESUME_DIR = "resume"
EVALUATIONS_FILE = "evaluations.npz"
MONITOR_DIR = "monitor"
TRAIN_EPISODES, EVAL_EPISODES, FINAL_EPISODES = "train", "eval", "final"  # monitor/<these>/
LOGS_DIR = "logs"
# in logs/, named by SB3's logger formats (csv, json, log; tensorboard: events.out.tfevents.*)
PROGRESS_CSV, PROGRESS_JSON, LOG_TXT = "progress.csv", "progress.json", "log.txt"
CURVES_FILE = "curves.png"
TRIAL_FILE = "trial.json"
LOCK_FILE = ".rlexp.lock"
LATEST_LINK = "latest"  # next to the runs of a default dir: a link to the newest (rlexp.rundir.latest)
LOG_FILE = "rlexp.log"  # the job's log lines (Hydra's job logging)
HYDRA_DIR = ".hydra"
ABANDONED_PREFIX = ".abandoned_"  # what an abandoned run wrote, set aside when it starts over
SEED_DIR_PREFIX = "seed_"  # a search trial of several seeds: one run dir each
# what the commands that read a run write into it
EVALUATE_DIR, VIDEOS_DIR, EXPORT_DIR = "eval", "videos", "export"  # (export_<agent> for agents but the final

# summary.json's status
RUNNING, COMPLETED, INTERRUPTED = "running", "completed", "interrupted"  # interrupted: resumable
FAILED, PRUNED, ABORTED = "failed", "pruned", "aborted"

# modules that moved since runs were written, old name -> new (a name in them moves with them): a run of an
# earlier release reads as one of today's (its config compares equal to the command that made it, its model
# zip's pickles find their classes); rlexp.build was renamed rlexp.builders (tools read `build/` as output)
MOVED_MODULES = {"rlexp.run.schedules": "rlexp.builders.schedules", "rlexp.build": "rlexp.builders"}


def moved_name(dotted: str) -> str:
    """``dotted`` (a module, or a name in one) under today's module names."""
    for old, new in MOVED_MODULES.items():
        if dotted == old or dotted.startswith(old + "."):
            return new + dotted[len(old) :]
    return dotted


def checkpoint_dir(run_dir: Path, step: int) -> Path:
    """``checkpoints/step_<N>``, N zero-padded so that names sort as steps."""
    return run_dir / CHECKPOINT_DIR / f"{CHECKPOINT_PREFIX}{step:012d}"


def checkpoint_steps(run_dir: Path) -> dict[int, Path]:
    """The checkpoints of a run by step (whole or not: rlexp.rundir.agents tells)."""
    found = {}
    for d in (run_dir / CHECKPOINT_DIR).glob(f"{CHECKPOINT_PREFIX}*"):
        step = d.name.removeprefix(CHECKPOINT_PREFIX)
        if step.isdigit():
            found[int(step)] = d
    return dict(sorted(found.items()))


def read_summary(run_dir: Path, remedy: str = "move the run dir aside or choose another one") -> dict[str, Any] | None:
    """The run's summary.json (None when there is none); an unreadable one is refused, saying ``remedy``."""
    path = run_dir / SUMMARY_FILE
    if not path.is_file():
        return None
    try:
        summary = json.loads(path.read_text())
        if not isinstance(summary, dict):
            raise ValueError(f"a JSON {type(summary).__name__}, not an object")
        return summary
    except (OSError, ValueError) as err:
        raise ConfigError(f"{path}: unreadable ({err}); {remedy}") from None


def write_summary(run_dir: Path, summary: dict[str, Any]) -> None:
    atomic_write_json(run_dir / SUMMARY_FILE, summary)


_YAML = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when there: 200 configs in a blink
_MAP, _SEQ = "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"
_SCALARS = {f"tag:yaml.org,2002:{t}" for t in ("null", "bool", "int", "float", "binary", "timestamp", "str")}


class _Unusual(Exception):
    """A node that _plain leaves to PyYAML's own constructor."""


def _plain(node: yaml.Node, loader: Any, seen: set[int]) -> Any:
    """The data of a composed node as PyYAML's safe constructor builds it, by plain recursion (PyYAML's goes
    through a generator per mapping: half of a config's load); each scalar by its tag's own constructor.
    Raises _Unusual at a node the plain recursion may not build alike: a collection met twice (an alias), a
    key that is not a scalar, a scalar of another tag than YAML's plain ones (a merge key among them)."""
    if isinstance(node, yaml.ScalarNode):
        if node.tag not in _SCALARS:
            raise _Unusual
        return loader.yaml_constructors[node.tag](loader, node)
    if id(node) in seen:
        raise _Unusual
    seen.add(id(node))
    if isinstance(node, yaml.MappingNode) and node.tag == _MAP:
        data = {}
        for key, value in node.value:
            if not isinstance(key, yaml.ScalarNode):
                raise _Unusual
            data[_plain(key, loader, seen)] = _plain(value, loader, seen)
        return data
    if isinstance(node, yaml.SequenceNode) and node.tag == _SEQ:
        return [_plain(item, loader, seen) for item in node.value]
    raise _Unusual


def yaml_data(text: str) -> Any:
    """``yaml.safe_load(text)`` (libyaml's parser where installed), the same data built in half the time:
    what a report over 10,000 runs spends most of its reading on. A document with what the plain build
    leaves aside (an alias, a merge key, a set...) is built by PyYAML's constructor itself."""
    loader = _YAML(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        try:
            return _plain(node, loader, set())
        except _Unusual:
            return loader.construct_document(node)
    finally:
        loader.dispose()


def read_config_dict(run_dir: Path) -> dict[str, Any]:
    """config.yaml as plain data (for reading many runs fast: reports); raises OSError or ValueError."""
    config = yaml_data((run_dir / CONFIG_FILE).read_text())
    if not isinstance(config, dict):
        raise ValueError(f"{run_dir / CONFIG_FILE}: not a mapping")
    return moved_targets(config)


def moved_targets(node: Any) -> Any:
    """A config (plain data) whose ``_target_``s name today's modules, changed in place."""
    if isinstance(node, dict):
        target = node.get("_target_")
        if isinstance(target, str):
            node["_target_"] = moved_name(target)
        for value in node.values():
            moved_targets(value)
    elif isinstance(node, list):
        for value in node:
            moved_targets(value)
    return node


def read_config(run_dir: Path, remedy: str = "choose another run dir") -> DictConfig:
    """The run's config.yaml typed by today's schema: a key added since takes its default, so that a run
    of an older rlexp still compares equal to its own command and opens in the commands that read runs.
    The algo node (untyped in the schema: any algorithm's) gets the keys it lacks from the schema of the
    algorithm its ``_target_`` names; a class of the user's own is kept as saved.
    (A command that builds what it names reads it with rlexp.rundir.trust.read_trusted_config.)"""
    from rlexp.config.algorithms import algo_defaults
    from rlexp.config.schema import ExperimentConfig

    path = run_dir / CONFIG_FILE
    try:
        saved = read_config_dict(run_dir)
        algo = saved.get("algo")
        defaults = algo_defaults(algo.get("_target_")) if isinstance(algo, dict) else None
        if defaults and isinstance(
            algo, dict
        ):  # (the keys the run saved as saved, in their order; those it lacks after them)
            saved["algo"] = {**algo, **{k: v for k, v in defaults.items() if k not in algo}}
        merged = OmegaConf.merge(OmegaConf.structured(ExperimentConfig), saved)
        assert isinstance(merged, DictConfig)  # (a mapping merged into a structured mapping)
        return merged
    except Exception as err:  # unreadable, not YAML, or not a run's config (a schema error)
        raise ConfigError(f"{path}: unreadable ({collapsed(err)[:300]}); {remedy}") from None


def write_config(run_dir: Path, config: dict[str, Any], command: str) -> None:
    """config.yaml and command.txt, the command that runs it again exactly. ``config``: the composed config,
    resolved, as plain data (rlexp.config.plain.plain_dict): config.yaml holds it whole."""
    atomic_write_text(run_dir / CONFIG_FILE, OmegaConf.to_yaml(config))
    atomic_write_text(run_dir / COMMAND_FILE, command + "\n")


def read_command(run_dir: Path) -> str | None:
    """command.txt: the command that runs the run again in its dir (None when it is missing or unreadable)."""
    try:
        return (run_dir / COMMAND_FILE).read_text().strip() or None
    except (OSError, UnicodeDecodeError):
        return None


@dataclass
class Evaluations:
    """evaluations.npz (SB3's EvalCallback, RL Zoo's format): per evaluation, its step and episodes."""

    timesteps: np.ndarray  # (evaluations,)
    results: np.ndarray  # (evaluations, episodes): episode returns
    ep_lengths: np.ndarray  # (evaluations, episodes)
    successes: np.ndarray | None = None  # (evaluations, episodes) for envs that report is_success

    @property
    def means(self) -> np.ndarray:
        return np.asarray(self.results, dtype=np.float64).reshape(len(self.timesteps), -1).mean(axis=1)


def read_evaluations(run_dir: Path) -> Evaluations | None:
    """The run's periodic evaluations, read in full (None: none yet). A damaged file raises what numpy
    met (OSError, ValueError, KeyError, zipfile's and zlib's errors)."""
    npz = run_dir / EVALUATIONS_FILE
    if not npz.is_file():
        return None
    with np.load(npz) as data:  # (members are read lazily: each in full here)
        members = {name: data[name] for name in data.files}
    return Evaluations(
        np.asarray(members["timesteps"]),
        np.asarray(members["results"]),
        np.asarray(members.get("ep_lengths", np.empty((len(members["timesteps"]), 0)))),
        members.get("successes"),
    )


def read_evaluations_or_set_aside(run_dir: Path) -> Evaluations | None:
    """For a resumed run: its evaluations, or None with an unreadable file moved to
    ``evaluations.npz.damaged`` (written atomically, so a copy or a disk at fault) and a warning."""
    npz = run_dir / EVALUATIONS_FILE
    try:
        return read_evaluations(run_dir)
    except Exception as err:  # BadZipFile, zlib.error, EOFError, KeyError, ValueError...
        aside = npz.with_name(npz.name + ".damaged")
        npz.replace(aside)
        log.warning(
            "%s is unreadable (%s); moved to %s, the resumed run's evaluations start afresh",
            npz,
            one_line_error(err),
            aside,
        )
        return None


def best_record(rewards: Any, step: int) -> dict[str, Any]:
    """best.json (and summary.json's best_eval): the evaluation that made the best agent the best."""
    rewards = np.asarray(rewards)
    return {
        "mean": float(rewards.mean()),
        "std": float(rewards.std()),
        "episodes": int(rewards.size),
        "step": int(step),
    }


def read_best(run_dir: Path) -> dict[str, Any] | None:
    """best/best.json (None when absent or unreadable, with a warning for the latter)."""
    path = run_dir / BEST_DIR / BEST_FILE
    if not path.is_file():
        return None
    try:
        best = json.loads(path.read_text())
        float(best["mean"])
        return best
    except (OSError, ValueError, TypeError, KeyError) as err:
        log.warning("%s is unreadable (%s); the best so far is taken from the evaluations", path, one_line_error(err))
        return None


def write_best(best_dir: Path, best: dict[str, Any]) -> None:
    atomic_write_json(best_dir / BEST_FILE, best)


def write_trial(run_dir: Path, record: dict[str, Any]) -> None:
    atomic_write_json(run_dir / TRIAL_FILE, record)
