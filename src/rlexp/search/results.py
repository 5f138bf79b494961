"""What a search leaves in its sweep directory, rewritten after every batch so it can be read mid-sweep.

optimization_results.yaml    best value, params and trial; trials per state
trials.csv                   one row per trial: state, value, params, seed, the command to re-run it
tuned/<algo>_<env>_search.yaml   the best params as a tuned file (see README), written again when the best changes
plots/*.png                  history, parameter importances, intermediate values (at the end)
"""

from __future__ import annotations

import csv
import io
import json
import logging
import re
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import optuna
import yaml
from optuna.trial import FrozenTrial, TrialState

from rlexp.config.overrides import as_override
from rlexp.files.atomic import atomic_write_text
from rlexp.rundir.contract import CONFIG_FILE, SEED_DIR_PREFIX, read_config_dict
from rlexp.search.study import COMMAND_ATTR, RUN_DIR_ATTR

log = logging.getLogger(__name__)


def _value(text: Any) -> Any:
    """Categorical lists travel as JSON literals (search_space._literal); turn them back into lists."""
    if isinstance(text, str) and text[:1] in ("[", "{"):
        return json.loads(text)
    return text


def trial_command(job_overrides: list[str], n_seeds: int = 1) -> str:
    """The `rlexp` command that re-runs a trial as normal training runs: the job's overrides less the
    search's own (hparams, hydra.*); the search's per-trial budget is kept explicitly. A trial of
    several seeds becomes a multirun over them."""
    kept = [o for o in job_overrides if not o.lstrip("+~").startswith(("hparams", "hydra.", "hydra/"))]
    if n_seeds == 1:
        return shlex.join(["rlexp", *kept])
    first = int(next(o for o in kept if o.startswith("seed=")).partition("=")[2])
    kept = [o for o in kept if not o.startswith("seed=")]
    return shlex.join(["rlexp", "-m", *kept, "seed=" + ",".join(str(s) for s in range(first, first + n_seeds))])


def trial_dir(sweep_dir: Path, number: int) -> Path:
    """Where the sweeper puts a trial's run (hydra.sweep.subdir=trial_<number>)."""
    return sweep_dir / f"trial_{number:04d}"


# the parts of a run's config that decide how it trains (not where it logs)
TRAINING_KEYS = ("n_timesteps", "algo", "env", "lr_schedule", "clip_range_schedule", "action_noise")


def tuned_yaml(study: optuna.Study, name: str, best: FrozenTrial) -> str:
    """A trial as a complete `tuned/` file: its run's training config, not only the searched keys,
    so that the values the search started from (e.g. an earlier tuned file's n_envs) come along."""
    run_dir = Path(best.user_attrs[RUN_DIR_ATTR])
    # a trial of several seeds keeps one run per seed in seed_<s>/; their training configs differ only in seed
    one = run_dir / CONFIG_FILE
    configs = [one] if one.is_file() else sorted(run_dir.glob(f"{SEED_DIR_PREFIX}*/{CONFIG_FILE}"))
    used = [read_config_dict(path.parent) for path in configs]  # may raise OSError, ValueError
    if not used:
        raise OSError(f"no {CONFIG_FILE} in {run_dir}")
    seeds = ", ".join(str(u["seed"]) for u in used)
    body = {"tuned_file": name, "tuned_env_id": used[0]["env"]["id"], **{k: used[0][k] for k in TRAINING_KEYS}}
    header = (
        "# @package _global_\n"
        f"# Found by an rlexp search: study {study.study_name}, trial {best.number}, seed{'s' * (len(used) > 1)} {seeds}, "
        f"value {best.value:.6g} ({study.direction.name.lower()}).\n"
        f"# Searched: {', '.join(best.params)}.\n"
    )
    return header + yaml.safe_dump(body, sort_keys=False)


def _csv(trials: list[FrozenTrial]) -> str:
    names = sorted({key for t in trials for key in t.params})
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["number", "state", "value", *names, "duration_s", "fail_reason", "command"])
    for t in trials:
        duration = t.duration.total_seconds() if t.duration else ""
        writer.writerow(
            [
                t.number,
                t.state.name,
                "" if t.value is None else t.value,
                *(t.params.get(n, "") for n in names),
                duration,
                t.user_attrs.get("fail_reason", ""),
                t.user_attrs.get(COMMAND_ATTR, ""),
            ]
        )
    return out.getvalue()


def _plots(study: optuna.Study, directory: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from optuna.visualization import matplotlib as ovm

    directory.mkdir(parents=True, exist_ok=True)
    for name, draw in (
        ("history", ovm.plot_optimization_history),
        ("importances", ovm.plot_param_importances),
        ("intermediate_values", ovm.plot_intermediate_values),
    ):
        try:
            draw(study)
            plt.gcf().set_size_inches(9, 5)
            plt.tight_layout()
            plt.savefig(directory / f"{name}.png", dpi=90)
        except Exception as err:  # e.g. importances need two completed trials
            log.info("plot %s skipped: %s", name, err)
        finally:
            plt.close("all")


# the tuned file of each sweep dir, by the best trial this process wrote it from: written again only when the
# best changes (the best run's config read, the file written, at every trial otherwise)
_tuned_made: dict[Path, tuple[Any, ...]] = {}


def write_results(
    study: optuna.Study, sweep_dir: Path, choices: Mapping[str, Any], plots: bool, winner: int | None = None
) -> dict[str, Any]:
    """Writes the sweep dir's results and returns optimization_results.yaml's content.

    ``choices``: the sweep's group choices (Hydra's ``hydra.runtime.choices``: its algo and env name the
    tuned file); ``winner``: the trial chosen by robust selection (re-training on fresh seeds), else the
    best one."""
    trials = study.get_trials(deepcopy=False)
    counts = {state.name: sum(t.state == state for t in trials) for state in TrialState}
    results: dict[str, Any] = {
        "study_name": study.study_name,
        "direction": study.direction.name.lower(),
        "trials": {k: v for k, v in counts.items() if v},
    }
    complete = [t for t in trials if t.state == TrialState.COMPLETE]
    if complete:
        best = study.best_trial if winner is None else study.trials[winner]
        results["best"] = {
            "chosen_by": "search value" if winner is None else "mean over fresh seeds (retrain.yaml)",
            "value": best.value,
            "trial": best.number,
            "params": {k: _value(v) for k, v in best.params.items()},
            "command": best.user_attrs.get(COMMAND_ATTR),
        }
        algo, env = choices.get("algo"), choices.get("env")
        name = f"{algo}_{env}_search"
        tuned = sweep_dir / "tuned" / f"{name}.yaml"
        made = (study.study_name, best.number, best.value, best.user_attrs.get(RUN_DIR_ATTR), best.datetime_complete)
        try:
            if _tuned_made.get(tuned) != made or not tuned.is_file():  # (a trial that left the best: as it was)
                atomic_write_text(tuned, tuned_yaml(study, name, best))
                _tuned_made[tuned] = made
            results["tuned_file"] = str(tuned)
            searchpath = f"file://{sweep_dir}"
            if not re.fullmatch(r"[\w./:+-]+", searchpath):  # (quoted for Hydra: a path with spaces...)
                searchpath = as_override("hydra.searchpath", searchpath).partition("=")[2]
            results["train_with_it"] = shlex.join(
                ["rlexp", f"algo={algo}", f"env={env}", f"hydra.searchpath=[{searchpath}]", f"tuned={name}"]
            )
        except (OSError, KeyError, ValueError) as err:  # the best trial ran where this sweeper cannot read its run dir
            log.warning("no tuned file: cannot read the best trial's config (%s)", err)
    sweep_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_text(sweep_dir / "optimization_results.yaml", yaml.safe_dump(results, sort_keys=False))
    atomic_write_text(sweep_dir / "trials.csv", _csv(trials))
    if plots:
        _plots(study, sweep_dir / "plots")
    return results
