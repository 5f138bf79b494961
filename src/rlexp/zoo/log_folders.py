"""An RL Zoo log folder read as a run, so that a zoo user keeps their trained agents: ``rlexp evaluate``,
``video``, ``export`` and ``report`` take ``logs/<algo>/<EnvId>_<n>/`` (or a zip in it) as they take a run dir.

What the zoo's train.py writes there, and what rlexp reads of it:

    <EnvId>_<n>/
      <EnvId>.zip, best_model.zip         the final agent, the best of the periodic evaluations
      rl_model_<N>_steps.zip              checkpoints (+ rl_model_vecnormalize_<N>_steps.pkl)
      evaluations.npz                     the periodic evaluations (SB3's EvalCallback)
      <EnvId>/args.yml, config.yml        the command's arguments and the hyperparameters used
      <EnvId>/vecnormalize.pkl            the normalization statistics, where the run normalized

The zoo saves both YAML files with a Python tag (``!!python/object/apply:collections.OrderedDict``); they are
read with a safe loader that knows that one tag and no other. Their Python strings are read with
rlexp.zoo.format (literals only), their values become an rlexp config (``rlexp.config.schema``), and
that config passes the same allow-list as a stranger's rlexp run (rlexp.rundir.trust) before anything is
built; the zips and pickles are unpickled with the same allow-list as rlexp's own (rlexp.rundir.pickles).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from omegaconf import DictConfig, OmegaConf
from yaml.composer import ComposerError

from rlexp.config.algorithms import ALGORITHMS, algorithm, by_zoo_name
from rlexp.config.env_families import family_of
from rlexp.config.env_routing import preset_wrappers
from rlexp.config.plain import plain_dict
from rlexp.errors import ConfigError, collapsed
from rlexp.rundir.agents import FINAL
from rlexp.rundir.contract import BEST_DIR, CHECKPOINT_PREFIX, VECNORMALIZE_FILE
from rlexp.rundir.record import ABSENT, RunRecord
from rlexp.zoo.format import WRAPPER_NAMES, rlexp_values, yaml_value

ARGS_FILE, CONFIG_FILE = "args.yml", "config.yml"
BEST_ZIP = "best_model.zip"
CHECKPOINT_ZIP = re.compile(r"rl_model_(\d+)_steps\.zip")
# the zoo's keys that change the env in a way rlexp's config has no key for
UNSUPPORTED = ("vec_env_wrapper",)


class _ZooLoader(yaml.SafeLoader):
    """YAML's safe loader plus the one Python tag the zoo writes: an OrderedDict of (key, value) pairs; and no
    alias, which the zoo never writes (a few nested aliases would make every walk of the config exponential)."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.events.AliasEvent):
            raise ComposerError(None, None, "an alias (*name), which RL Zoo never writes", self.peek_event().start_mark)
        return super().compose_node(parent, index)


def _ordered_dict(loader: _ZooLoader, node: yaml.Node) -> dict[Any, Any]:
    if not (isinstance(node, yaml.SequenceNode) and len(node.value) == 1):
        raise yaml.constructor.ConstructorError(None, None, "an OrderedDict of other than one list of pairs")
    pairs = loader.construct_sequence(node.value[0], deep=True)
    if not all(isinstance(p, list) and len(p) == 2 and isinstance(p[0], str) for p in pairs):
        raise yaml.constructor.ConstructorError(None, None, "an OrderedDict of other than (name, value) pairs")
    return dict(pairs)


_ZooLoader.add_constructor("tag:yaml.org,2002:python/object/apply:collections.OrderedDict", _ordered_dict)


@dataclass(frozen=True)
class ZooRun:
    """A zoo log folder: ``folder`` (``<EnvId>_<n>``) and its ``<EnvId>/`` subfolder of YAML files."""

    folder: Path
    # the zoo's name of the env in its file names (huggingface_sb3's EnvironmentName: ALE/Pong-v5 is ALE-Pong-v5,
    # my_pkg:MyEnv-v0 is MyEnv-v0); the id itself is args.yml's `env`
    env_name: str

    @property
    def files_dir(self) -> Path:
        return self.folder / self.env_name

    def agents(self) -> dict[str, tuple[Path, Path | None]]:
        """name (final, best, step_<N>) -> (zip, its VecNormalize statistics or None), of the agents saved."""
        stats = self.files_dir / VECNORMALIZE_FILE
        shared = stats if stats.is_file() else None
        found: dict[str, tuple[Path, Path | None]] = {}
        if (self.folder / f"{self.env_name}.zip").is_file():
            found[FINAL] = (self.folder / f"{self.env_name}.zip", shared)
        if (self.folder / BEST_ZIP).is_file():
            found[BEST_DIR] = (self.folder / BEST_ZIP, shared)
        steps = sorted(
            int(m.group(1)) for p in self.folder.glob("rl_model_*_steps.zip") if (m := CHECKPOINT_ZIP.fullmatch(p.name))
        )
        for step in steps:
            # (the zoo's checkpoints save no statistics of their own: its enjoy uses the run's, as here)
            own = self.folder / f"rl_model_vecnormalize_{step}_steps.pkl"
            found[f"{CHECKPOINT_PREFIX}{step}"] = (
                self.folder / f"rl_model_{step}_steps.zip",
                own if own.is_file() else shared,
            )
        return found

    def agent_of_zip(self, zip_path: Path) -> str:
        for name, (path, _) in self.agents().items():
            if path.resolve() == zip_path.resolve():
                return name
        raise ConfigError(
            f"{zip_path}: not an agent of the RL Zoo run {self.folder} (its agents: {', '.join(self.agents())})"
        )


def find_zoo_run(path: Path) -> ZooRun | None:
    """The zoo run ``path`` is (a log folder) or lies in (a zip of one); None when it is neither."""
    folder = path.parent if path.is_file() else path
    if not folder.is_dir():
        return None
    found = [
        d.name for d in folder.iterdir() if d.is_dir() and (d / ARGS_FILE).is_file() and (d / CONFIG_FILE).is_file()
    ]
    if len(found) != 1:
        return None
    if folder.name.startswith(f"{found[0]}_"):
        return ZooRun(folder, found[0])
    # rl_zoo3.load_from_hub lays an agent out the same way; with --exp-id -1 in <algo>/ itself, its zip beside
    # (a folder that also holds the algorithm's <EnvId>_<n> runs is theirs: a report reads each)
    beside = (folder / f"{found[0]}.zip").is_file()
    if not beside or any(_numbered_run(d) for d in folder.iterdir() if d.is_dir()):
        return None
    return ZooRun(folder, found[0])


def _numbered_run(folder: Path) -> bool:
    """Whether ``folder`` is a zoo run named <EnvId>_<n>, as train.py names them."""
    name, _, number = folder.name.rpartition("_")
    return number.isdigit() and (folder / name / ARGS_FILE).is_file()


def read_zoo_yaml(path: Path) -> dict[str, Any]:
    """args.yml or config.yml as plain data; anything but plain YAML and the zoo's OrderedDict is refused."""
    try:
        data = yaml.load(path.read_text(), Loader=_ZooLoader)  # (a safe loader, one tag added)
    except (OSError, ValueError, RecursionError, yaml.YAMLError) as err:  # (ValueError: not UTF-8)
        raise ConfigError(f"{path}: unreadable as RL Zoo's YAML ({collapsed(err)[:200]}); not opened") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: not a mapping of RL Zoo's keys; not opened")
    return data


def _algo_defaults(algo: str) -> dict[str, Any]:
    """rlexp's config of ``algo`` (its schema: its class and SB3's defaults, which are the zoo's for every key
    its entry leaves out)."""
    return plain_dict(OmegaConf.structured(algorithm(algo).schema))


def zoo_config_dict(run: ZooRun) -> dict[str, Any]:
    """The zoo run as the config.yaml an rlexp run of it would hold (values only: nothing built or checked)."""
    args = read_zoo_yaml(run.files_dir / ARGS_FILE)
    hyperparams = read_zoo_yaml(run.files_dir / CONFIG_FILE)
    try:
        return _config(run, args, hyperparams)
    except ConfigError:
        raise
    except (ValueError, TypeError, AttributeError, KeyError, IndexError, StopIteration, SyntaxError) as err:
        # (a value of another type or shape than the zoo writes)
        raise ConfigError(
            f"{run.files_dir}: {ARGS_FILE} or {CONFIG_FILE} holds a value rlexp cannot read ({collapsed(err)[:200]})"
        ) from None


def _config(run: ZooRun, args: dict[str, Any], hyperparams: dict[str, Any]) -> dict[str, Any]:
    zoo_algo = str(args.get("algo", ""))
    if zoo_algo == "her":  # (RL Zoo 1.0: SB3 1.0's HER class, gone from SB3 1.1 on)
        raise ConfigError(
            f"{run.files_dir / ARGS_FILE}: algo her: an agent of SB3 1.0's HER class (around "
            f"{hyperparams.get('model_class', '?')}, its dict observations flattened into one vector), which SB3 2 "
            "cannot load and rlexp does not read yet; not opened"
        )
    found = by_zoo_name(zoo_algo)
    if found is None:
        names = ", ".join(sorted(a.zoo for a in ALGORITHMS if a.zoo is not None))
        raise ConfigError(f"{run.files_dir / ARGS_FILE}: algo {zoo_algo!r} is not one rlexp trains ({names})")
    algo = found.name
    # (the zoo's callbacks are training's only, and code: a run is opened without them)
    values = rlexp_values(
        {"n_timesteps": args.get("n_timesteps") or 0, **{k: v for k, v in hyperparams.items() if k != "callback"}}
    )
    if int(args.get("n_timesteps") or 0) > 0:
        values["n_timesteps"] = int(args["n_timesteps"])
    env_id = str(args.get("env", run.env_name))
    family = family_of(env_id)
    config: dict[str, Any] = {
        "algo": _algo_defaults(algo),
        "env": {"id": env_id, "family": family.name if family else None},
        "seed": int(args.get("seed") or 0),
        "tuned_source": "an RL Zoo run",  # (a report groups zoo runs apart from rlexp runs of the pair)
    }
    # the packages the zoo imported to register envs (--gym-packages): code the run names, as the module part
    # of an env id (gymnasium's "module:EnvId"), which the allow-list checks
    packages = [str(p) for p in args.get("gym_packages") or []]
    if len(packages) > 1:
        raise ConfigError(
            f"{run.files_dir / ARGS_FILE}: gym_packages {packages}: rlexp opens runs of one package's envs"
        )
    if packages and ":" not in env_id:
        config["env"]["id"] = f"{packages[0]}:{env_id}"
    for key in UNSUPPORTED:
        if key in hyperparams:
            raise ConfigError(
                f"{run.files_dir / CONFIG_FILE}: {key} ({hyperparams[key]}) is a zoo feature rlexp does not read; not opened"
            )
    for key, value in values.items():
        if key == "env.wrappers":
            wrappers = {}
            for target, kwargs in value:
                name = target.rsplit(".", 1)[-1]
                wrappers[WRAPPER_NAMES.get(name, name.lower())] = {"_target_": target, **kwargs}
            value = wrappers
        elif key in ("lr_schedule", "clip_range_schedule"):
            value = {"_target_": f"rlexp.builders.schedules.{value}"}
        head, _, rest = key.partition(".")
        if rest:
            config.setdefault(head, {})[rest] = yaml_value(value)
        else:
            config[head] = yaml_value(value)
    # rlexp's own wrappers of the family's preset (SeededResets for panda-gym: evaluations that repeat)
    own = {k: v for k, v in preset_wrappers(env_id).items() if str(v.get("_target_", "")).startswith("rlexp.")}
    if own:
        config["env"]["wrappers"] = {**config["env"].get("wrappers", {}), **own}
    # the env as the zoo's enjoy builds it: config.yml's env_kwargs, unless the command gave its own
    if args.get("env_kwargs") is not None:
        config["env"]["kwargs"] = dict(args["env_kwargs"])
    config["env"].setdefault("kwargs", {})
    # the zoo evaluates some families with the stochastic policy (Atari, MiniGrid), everything else deterministic
    stochastic = family is not None and family.stochastic_eval
    evaluation = {"deterministic": not stochastic, "n_envs": int(args.get("n_eval_envs") or 1)}
    evaluation.update(freq=max(int(args.get("eval_freq") or 0), 0), n_episodes=int(args.get("eval_episodes") or 5))
    config["callbacks"] = {"eval": evaluation}
    return config


def zoo_config(run: ZooRun, raw: dict[str, Any] | None = None) -> DictConfig:
    """The zoo run's config (``raw``: its zoo_config_dict, when read already) typed by rlexp's schema."""
    from rlexp.config.schema import ExperimentConfig

    raw = zoo_config_dict(run) if raw is None else raw
    try:
        merged = OmegaConf.merge(OmegaConf.structured(ExperimentConfig), raw)
    except Exception as err:  # a value of the wrong type for rlexp's schema
        raise ConfigError(
            f"{run.files_dir / CONFIG_FILE}: not readable as an rlexp config ({collapsed(err)[:200]})"
        ) from None
    assert isinstance(merged, DictConfig)  # (a mapping merged into a structured mapping)
    return merged


# what a zoo run's record holds (the rest of summary.json is rlexp's own: provenance, threads, checksums...)
ZOO_SUMMARY_KEYS = ("status", "algo", "env_id", "seed", "steps_done", "final_eval", "best_eval")


def zoo_summary(run: ZooRun) -> RunRecord:
    """What a report reads of a run's summary.json, for a zoo run: its algorithm, env, seed and steps, and as
    its final evaluation the last of its periodic evaluations (evaluations.npz: the zoo evaluates no more at
    the end), the best of them as its best. Without evaluations.npz (``--eval-freq -1``) it has no score."""
    from rlexp.rundir.contract import COMPLETED, read_evaluations

    args = read_zoo_yaml(run.files_dir / ARGS_FILE)
    final = run.agents().get(FINAL)
    steps = _num_timesteps(final[0]) if final else None
    seed = args.get("seed")
    record = RunRecord(
        # (a status other than rlexp's own is a report's reason to leave the run out)
        status=COMPLETED if final else f"no {run.env_name}.zip: the zoo's training did not finish",
        algo=getattr(by_zoo_name(str(args.get("algo"))), "name", str(args.get("algo"))),
        env_id=str(args.get("env", run.env_name)),
        seed=seed if isinstance(seed, int) else None,
        steps_done=ABSENT if steps is None else steps,
    )
    if not final:
        return record
    try:
        evaluations = read_evaluations(run.folder)
        means = None if evaluations is None else evaluations.means
    except Exception as err:  # np.load: BadZipFile, EOFError...; the zoo rewrites it in place while it trains
        record.status = f"evaluations.npz unreadable ({type(err).__name__}): still training?"
        return record
    if evaluations is None or means is None or not len(means):
        record.status = "no evaluations.npz: trained with --eval-freq -1 (rlexp evaluate scores its agent)"
        return record
    per_evaluation = int(evaluations.results.size // max(len(means), 1))
    last, best = len(means) - 1, int(means.argmax())
    record.final_eval, record.best_eval = (
        {"mean": float(means[i]), "step": int(evaluations.timesteps[i]), "n_episodes": per_evaluation}
        for i in (last, best)
    )
    return record


def _num_timesteps(zip_path: Path) -> int | None:
    """The agent's training steps, from the JSON of its zip (no pickle opened)."""
    import json
    import zipfile

    try:
        with zipfile.ZipFile(zip_path) as archive:
            return int(json.loads(archive.read("data"))["num_timesteps"])
    except Exception:  # a damaged zip: the steps are unknown, the commands that load it say why
        return None
