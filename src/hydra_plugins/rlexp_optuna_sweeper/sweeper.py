"""The sweeper: asks Optuna for trials, launches them as Hydra jobs, tells Optuna how they ended.

Jobs reach their live trial through the shared storage (rlexp.search.study.job_trial) to report
evaluations and to stop when the pruner says so; the sweeper then records the trial as PRUNED.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import math
import os
import shlex
import sys
import warnings
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import optuna
import yaml
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.plugins import Plugins
from hydra.core.utils import JobReturn, JobStatus
from hydra.plugins.sweeper import Sweeper
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig, OmegaConf, open_dict, read_write
from optuna.trial import TrialState

import hydra_plugins.rlexp_optuna_sweeper.config  # noqa: F401  (registers the schema)
from rlexp.config.hydra_versions import instantiate
from rlexp.config.overrides import as_override
from rlexp.errors import ConfigError, Diverged, Interrupted
from rlexp.files.atomic import atomic_write_text
from rlexp.lifecycle.lock import abandoned, is_free, wait_until_free
from rlexp.rundir.contract import COMPLETED, FAILED, INTERRUPTED, PRUNED, SEED_DIR_PREFIX, TRIAL_FILE
from rlexp.rundir.record import RunRecord, read_record
from rlexp.search.results import trial_command, trial_dir, write_results
from rlexp.search.space import parse_search_space
from rlexp.search.storage import has_password, open_storage, shown
from rlexp.search.study import (
    COMMAND_ATTR,
    ENV_STORAGE,
    ENV_STUDY,
    ENV_TRIAL,
    OVER_CAP_ATTR,
    OWNER_ATTR,
    RUN_DIR_ATTR,
    RUN_NUMBER_ATTR,
    SEARCH_ATTR,
    SEARCH_COMMAND_ATTR,
    SEARCH_CONFIG_ATTR,
    SearchConfig,
    counted_trials,
    finished_trials,
    hand_over,
    lost_trial,
    owner,
    reclaim_interrupted_trials,
    recorded_overrides,
    search_changes,
    search_record,
    searched,
)

log = logging.getLogger(__name__)
# Optuna flags e.g. multivariate TPE and its matplotlib plots as experimental, on every call
warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
# how long a lost trial's run may take to let go of its dir (a cancelled job saving its checkpoint within
# SLURM's KillWait) before the trial that runs its parameters again starts a run of its own
HANDOVER_WAIT_S = 300.0


class OptunaSweeper(Sweeper):
    def __init__(
        self,
        sampler: optuna.samplers.BaseSampler | DictConfig,
        pruner: optuna.pruners.BasePruner | DictConfig,
        direction: str,
        storage: str | None,
        study_name: str,
        n_trials: int,
        n_jobs: int,
        max_failure_rate: float,
        max_total_trials: int | None,
        seed: int,
        seeds_per_trial: int,
        params: DictConfig,
        plots: bool,
        retrain_top_k: int = 0,
        retrain_seeds: int = 3,
    ) -> None:
        # their `_target_` nodes: Hydra 1.3 builds them, 1.4 hands a plugin its config as it is
        self.sampler, self.pruner = (instantiate(n) if isinstance(n, DictConfig) else n for n in (sampler, pruner))
        self.direction = direction
        self.storage_url = storage
        self.study_name = study_name
        self.n_trials, self.n_jobs = n_trials, n_jobs
        self.max_failure_rate = max_failure_rate
        self.max_total_trials = max_total_trials
        self.seed, self.seeds_per_trial = seed, seeds_per_trial
        self.params: dict[str, str] = {str(k): str(v) for k, v in (params or {}).items()}
        self.plots = plots
        self.retrain_top_k, self.retrain_seeds = retrain_top_k, retrain_seeds
        self.job_idx = 0
        self._runs: dict[int, int] = {}  # trial number -> the number of the run it is (its seed, its dir)

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        self.config = config
        self.config_loader = hydra_context.config_loader  # (an earlier study's config is composed again)
        self.launcher = Plugins.instance().instantiate_launcher(
            hydra_context=hydra_context, task_function=task_function, config=config
        )
        self.sweep_dir = Path(config.hydra.sweep.dir).resolve()
        if importlib.util.find_spec("hydra_plugins.hydra_optuna_sweeper") is not None:
            log.warning(
                "hydra-optuna-sweeper is installed too and also defines hydra/sweeper=optuna; rlexp's configs "
                "come first on Hydra's search path, so this search runs rlexp's sweeper (%s)",
                __name__,
            )
        if self.storage_url and has_password(self.storage_url):
            self._hide_password(config)

    def _hide_password(self, config: DictConfig) -> None:
        """The storage's password stays in this process: the trials' configs are composed from the
        sweep's overrides, which Hydra writes into every trial's .hydra/, so they get the URL with
        ``***``; the jobs get the real one from the environment (ENV_STORAGE)."""
        with read_write(config.hydra), open_dict(config.hydra):
            config.hydra.sweeper.storage = shown(self.storage_url)
            config.hydra.overrides.hydra = [_shown_override(o) for o in config.hydra.overrides.hydra]
        log.warning(
            "hydra.sweeper.storage holds a password: rlexp prints and writes it as *** (the commands it "
            "prints too); give it as PGPASSWORD or in ~/.pgpass instead (docs: guides/security.md)"
        )

    # ------------------------------------------------------------------------------------ checks
    def _check(self) -> None:
        if self.direction not in ("maximize", "minimize"):
            raise ConfigError(f"hydra.sweeper.direction={self.direction}: choose maximize or minimize")
        for name, value in (
            ("n_trials", self.n_trials),
            ("n_jobs", self.n_jobs),
            ("seeds_per_trial", self.seeds_per_trial),
            ("retrain_seeds", self.retrain_seeds),
        ):
            if value < 1:
                raise ConfigError(f"hydra.sweeper.{name} must be >= 1, got {value}")
        if not 0.0 <= self.max_failure_rate <= 1.0:
            raise ConfigError(f"hydra.sweeper.max_failure_rate must be in [0, 1], got {self.max_failure_rate}")

    def _refuse_seed(self, parsed: list[Any]) -> None:
        """A search gives each trial its seed (``_trial_seed``): a ``seed`` on the command line would be
        overridden in every trial without a word, or searched over as if it were a hyperparameter."""
        for override in parsed:
            if override.key_or_group == "seed":
                raise ConfigError(
                    f"{override.input_line}: a search seeds trial k with hydra.sweeper.seed + k*seeds_per_trial; "
                    f"give hydra.sweeper.seed instead (now {self.seed})"
                )

    def _open_study(self, space: dict[str, Any], fixed: list[str]) -> optuna.Study:
        """The study, created or loaded; nothing is written to it when any setting is wrong, nor when it
        was made for another search (``space``: the distributions searched; ``fixed``: the overrides that
        fix values)."""
        url = self.storage_url or f"sqlite:///{self.sweep_dir / 'study.db'}"
        if url.startswith("sqlite:///"):
            Path(url[len("sqlite:///") :]).parent.mkdir(parents=True, exist_ok=True)
        storage = open_storage(url)
        existing = {s.study_name: s for s in optuna.get_all_study_summaries(storage)}
        if self.study_name in existing:
            direction = existing[self.study_name].direction.name.lower()
            if direction != self.direction:
                raise ConfigError(
                    f"hydra.sweeper.study_name={self.study_name} exists in {shown(url)} with direction={direction}, "
                    f"not {self.direction}"
                )
        self.storage_url = url
        if self.study_name in existing:
            study = optuna.load_study(
                storage=storage, study_name=self.study_name, sampler=self.sampler, pruner=self.pruner
            )
        else:  # (load_if_exists: another worker of a shared study may create it at the same moment)
            study = optuna.create_study(
                storage=storage,
                study_name=self.study_name,
                direction=self.direction,
                sampler=self.sampler,
                pruner=self.pruner,
                load_if_exists=True,
            )
        words, now = search_record(space, fixed), SearchConfig.of(self.config, searched(space), fixed)
        recorded, by_config = study.user_attrs.get(SEARCH_ATTR), study.user_attrs.get(SEARCH_CONFIG_ATTR)
        if recorded is None and by_config is None:  # a new study (or one an early release made): its own
            study.set_user_attr(SEARCH_ATTR, words)  # (as typed: what releases before the config's compare)
            study.set_user_attr(SEARCH_CONFIG_ATTR, now.record())
            study.set_user_attr(SEARCH_COMMAND_ATTR, shlex.join(["rlexp", *_argv_shown()]))
            return study
        if by_config is not None:
            changes = SearchConfig.from_record(by_config).changes(now)
        elif recorded == words:
            changes = []
        else:  # a study of an earlier release, typed otherwise: the config its words compose
            before = self._composed(recorded)
            changes = search_changes(recorded, words) if before is None else before.changes(now)
        if changes:
            command = study.user_attrs.get(SEARCH_COMMAND_ATTR, "the command that made it")
            raise ConfigError(self._another_search(url, changes, command))
        if by_config is None:  # (from now on compared by its config)
            study.set_user_attr(SEARCH_CONFIG_ATTR, now.record())
        return study

    def _composed(self, recorded: dict[str, str]) -> SearchConfig | None:
        """The search of a study that an earlier release made, which kept only its command's words
        (search_record): its fixed overrides composed again, with this command's ``hydra.*`` ones; None when
        they no longer compose (a key it added with ``+``, an option since removed)."""
        fixed, space = recorded_overrides(recorded)
        try:
            config = self.config_loader.load_sweep_config(self.config, fixed)
        except Exception:  # (Hydra's and OmegaConf's errors: the words are compared instead)
            return None
        return SearchConfig.of(config, space, fixed)

    def _another_search(self, url: str, changes: list[str], command: str) -> str:
        """Why a study made for another search is not continued, and a new one's command line."""
        changed = "; ".join(changes[:4]) + (f"; and {len(changes) - 4} more" if len(changes) > 4 else "")
        free = next(
            self.sweep_dir.with_name(f"{self.sweep_dir.name}-{n}")
            for n in range(2, 10_000)
            if not self.sweep_dir.with_name(f"{self.sweep_dir.name}-{n}").exists()
        )
        new = [as_override("hydra.sweep.dir", os.path.relpath(free) if free.is_relative_to(Path.cwd()) else str(free))]
        if url != f"sqlite:///{self.sweep_dir / 'study.db'}":  # a shared storage: the study's name is the key
            new.append(f"hydra.sweeper.study_name={self.study_name}-{free.name.rsplit('-', 1)[1]}")
        replaced = {line.split("=")[0] for line in new}
        return (
            f"study {self.study_name} in {shown(url)} was made for another search ({changed}); a new search: "
            f"{shlex.join(['rlexp', *[w for w in _argv_shown() if w.split('=')[0] not in replaced], *new])}; "
            f"this one: {command}"
        )

    # ------------------------------------------------------------------------------------ sweep
    def sweep(self, arguments: list[str]) -> None:
        self._check()
        parsed = OverridesParser.create().parse_overrides(arguments)
        self._refuse_seed(parsed)
        sweeps = [o.input_line for o in parsed if o.is_sweep_override()]
        fixed = [o.input_line for o in parsed if not o.is_sweep_override()]
        space = parse_search_space(self.params, sweeps, self.config, fixed)
        if not space:
            raise ConfigError("hydra.sweeper.params is empty: nothing to search (use hparams=search)")
        study = self._open_study(space, fixed)
        os.environ[ENV_STORAGE] = self.storage_url  # (for the jobs, whichever launcher starts them)
        self._reseed_for_existing_trials(study)
        reclaimed = reclaim_interrupted_trials(study)
        if reclaimed:
            log.info("requeued %d trial(s) interrupted by an earlier run of this sweep", reclaimed)
        done = len(finished_trials(study))
        log.info(
            "study %s in %s: %d of %d trials finished", self.study_name, shown(self.storage_url), done, self.n_trials
        )
        if done >= self.n_trials:  # (a sweep run again with the same study: it continues, here past its end)
            log.info("nothing to run: raise hydra.sweeper.n_trials above %d to run more trials in this study", done)

        while True:
            if self.job_idx:  # (a worker of a shared study killed meanwhile: its trial runs again, here or elsewhere)
                taken = reclaim_interrupted_trials(study)
                if taken:
                    log.info("requeued %d trial(s) of a sweeper that ended while they ran", taken)
            remaining = self.n_trials - len(finished_trials(study))
            if self.max_total_trials is not None:
                counted = counted_trials(study)  # (a queued trial, one that runs again, holds its place in the cap)
                waiting = sum(t.state == TrialState.WAITING for t in counted)
                remaining = min(remaining, self.max_total_trials - len(counted) + waiting)
            if remaining <= 0:
                break
            trials = [study.ask(space) for _ in range(min(self.n_jobs, remaining))]
            for trial in trials:
                trial.set_user_attr(OWNER_ATTR, owner())
                self._runs[trial.number] = self._run_number(study, trial)
                trial.set_user_attr(RUN_DIR_ATTR, str(trial_dir(self.sweep_dir, self._runs[trial.number])))
            trials = self._within_cap(study, trials)
            if not trials:
                break
            batch = [self._job_overrides(trial, fixed) for trial in trials]
            for trial, overrides in zip(trials, batch, strict=True):
                trial.set_user_attr(COMMAND_ATTR, trial_command(overrides, self.seeds_per_trial))
            try:
                returns = self.launcher.launch(batch, initial_job_idx=self.job_idx)
            except Exception as err:  # a job's overrides do not compose, or one submitit job died without a result
                returns = [self._recorded_outcome(trial, err) for trial in trials]
            except Interrupted as err:  # a stop signal: the trials that ended count, the others run again
                for trial in trials:
                    self._tell_or_hand_over(study, trial, self._recorded_outcome(trial, err))
                write_results(study, self.sweep_dir, self.config, plots=False)
                raise
            self.job_idx += len(batch)
            for trial, ret in zip(trials, returns, strict=True):
                if ret.status == JobStatus.COMPLETED or _stopped_at(trial) is None:
                    self._tell(study, trial, ret)
                else:  # a job of its own stopped by a signal (submitit's launchers: its error, not ours)
                    self._tell_or_hand_over(study, trial, ret)
            results = write_results(study, self.sweep_dir, self.config, plots=False)
            try:
                self._check_failure_rate(study)
            except ConfigError:
                print(self._closing_line(study, results))
                raise

        winner = self._retrain_top_trials(study, fixed) if self.retrain_top_k > 0 else None
        results = write_results(study, self.sweep_dir, self.config, plots=self.plots, winner=winner)
        for _ in range(5):  # (bounded: workers ending one after another settle in a pass or two)
            if winner is not None or _best_value(study) == (results.get("best") or {}).get("value"):
                break
            # another worker's trial ended meanwhile, the study's new best: the files and the line say so
            results = write_results(study, self.sweep_dir, self.config, plots=self.plots)
        print(self._closing_line(study, results))

    def _closing_line(self, study: optuna.Study, results: dict[str, Any]) -> str:
        """How the search ended, in one line: trials by state, the best value and where its params are;
        or, while other workers of a shared study still run trials, what this worker saw as it ended."""
        done = finished_trials(study)
        counts = {state: sum(t.state == state for t in done) for state in (TrialState.COMPLETE, TrialState.PRUNED)}
        failed = len(done) - sum(counts.values())
        tally = f"{counts[TrialState.COMPLETE]} completed, {counts[TrialState.PRUNED]} pruned, {failed} failed"
        best = results.get("best")
        where = results.get("tuned_file") or str(self.sweep_dir / "optimization_results.yaml")
        going = sum(t.state in (TrialState.RUNNING, TrialState.WAITING) for t in counted_trials(study))
        if going:
            so_far = f"best so far {best['value']:.6g} (trial {best['trial']})" if best else "none completed yet"
            return (
                f"rlexp: search {self.study_name}: this worker is done, {going} trial{'s' * (going > 1)} still "
                f"running or queued in other workers; {len(done)} finished so far ({tally}); {so_far}; the last "
                f"worker to end writes the final results (params: {where})"
            )
        line = f"rlexp: search {self.study_name} done: {len(done)} trials ({tally})"
        if best is None:
            return line + f"; no trial completed; see {self.sweep_dir / 'trials.csv'}"
        return line + f"; best {best['value']:.6g} (trial {best['trial']}); params: {where}"

    def _tell_or_hand_over(self, study: optuna.Study, trial: optuna.Trial, ret: JobReturn) -> None:
        """A batch cut short by a stop signal: a trial whose run ended (completed, pruned, failed on its
        own) is told so; one whose run was stopped, or never started, is queued again."""
        record = _record(Path(trial.user_attrs[RUN_DIR_ATTR]))
        if ret.status == JobStatus.COMPLETED or isinstance(ret._return_value, optuna.TrialPruned):
            self._tell(study, trial, ret)
        elif record is not None and record.status == FAILED:
            error = record.error if isinstance(record.error, str) else None
            self._tell(study, trial, JobReturn(status=JobStatus.FAILED, _return_value=RuntimeError(error)))
        elif hand_over(study, study._storage.get_trial(trial._trial_id), _stopped_at(trial)):
            log.info("trial %d queued again (from its checkpoint, if its run saved one)", trial.number)

    def _reseed_for_existing_trials(self, study: optuna.Study) -> None:
        """A fixed seed would replay the first sweep's proposals in a resumed study, and two sweepers
        sharing a study would propose the same startup trials: mix in the study's size and this process.
        A new study with the default storage keeps the plain seed (a repeatable sweep)."""
        shared = self.storage_url != f"sqlite:///{self.sweep_dir / 'study.db'}"
        if not study.trials and not shared:
            return
        seed = zlib.crc32(f"{self.seed}:{len(study.trials)}:{owner()}".encode())
        node = self.config.hydra.sweeper.sampler
        if "seed" in node:
            study.sampler = instantiate(node, seed=seed)

    def _within_cap(self, study: optuna.Study, trials: list[optuna.Trial]) -> list[optuna.Trial]:
        """Trials past max_total_trials (two sweepers asked at the same moment) are given back.

        Trial numbers are unique and increasing across processes, so each process decides the same way:
        a trial is over the cap if more than max_total_trials counted trials have a number up to its own.
        """
        if self.max_total_trials is None:
            return trials
        numbers = sorted(t.number for t in counted_trials(study))
        kept = []
        for trial in trials:
            if sum(n <= trial.number for n in numbers) > self.max_total_trials:
                trial.set_user_attr(OVER_CAP_ATTR, True)
                study.tell(trial, state=TrialState.FAIL)
            else:
                kept.append(trial)
        return kept

    def _retrain_top_trials(self, study: optuna.Study, fixed: list[str]) -> int | None:
        """Re-trains the best ``retrain_top_k`` trials on ``retrain_seeds`` fresh seeds (the same seeds for
        every candidate) and returns the number of the trial with the best mean: a single lucky seed
        does not win. Results go to retrain.yaml; the runs to retrain/."""
        complete = [t for t in study.trials if t.state == TrialState.COMPLETE]
        if not complete:
            return None
        reverse = self.direction == "maximize"
        top = sorted(complete, key=lambda t: t.value, reverse=reverse)[: self.retrain_top_k]
        seeds = [self.seed + 1_000_000 + i for i in range(self.retrain_seeds)]  # never a search trial's seed
        jobs = [
            (trial, self._run_overrides(trial, fixed, seed, f"retrain/trial_{trial.number:04d}_seed_{seed}"))
            for trial in top
            for seed in seeds
        ]
        values: dict[int, list[float]] = {t.number: [] for t in top}
        for start in range(0, len(jobs), self.n_jobs):
            chunk = jobs[start : start + self.n_jobs]
            returns = self.launcher.launch([overrides for _, overrides in chunk], initial_job_idx=self.job_idx)
            self.job_idx += len(chunk)
            for (trial, _), ret in zip(chunk, returns, strict=True):
                ok = ret.status == JobStatus.COMPLETED and ret._return_value is not None
                values[trial.number].append(float(ret._return_value) if ok else float("nan"))
        means = {n: float(np.mean(v)) for n, v in values.items()}
        finite = {n: m for n, m in means.items() if math.isfinite(m)}
        winner = (max if reverse else min)(finite, key=finite.__getitem__) if finite else None
        report = {
            "seeds": seeds,
            "winner": winner,
            "candidates": [
                {
                    "trial": n,
                    "search_value": study.trials[n].value,
                    "values": values[n],
                    "mean": means[n],
                    "std": float(np.std(values[n])),
                }
                for n in values
            ],
        }
        atomic_write_text(self.sweep_dir / "retrain.yaml", yaml.safe_dump(report, sort_keys=False))
        log.info("robust selection over %d seeds: trial %s wins with mean %s", len(seeds), winner, means.get(winner))
        return winner

    def _run_overrides(self, trial: Any, fixed: list[str], seed: int, subdir: str) -> list[str]:
        """A normal run with the trial's parameters (the per-trial budget explicit for re-run commands)."""
        budget = (
            []
            if any(o.lstrip("+").startswith("n_timesteps=") for o in fixed)
            else [f"n_timesteps={self.config.n_timesteps}"]
        )
        return [
            *fixed,
            *budget,
            *(as_override(key, value) for key, value in trial.params.items()),
            f"seed={seed}",
            f"hydra.sweep.subdir={subdir}",
        ]

    def _run_number(self, study: optuna.Study, trial: optuna.Trial) -> int:
        """Whose run a trial is: its own, or, for a trial that runs a lost trial's parameters again (its
        sweeper was killed or preempted), the lost trial's run when it is in this sweep's dir: the same
        seed and run dir, so that it continues from the lost run's checkpoint (rlexp.lifecycle.state)."""
        lost = lost_trial(study, trial)
        if lost is None:
            return trial.number
        number = int(lost.user_attrs.get(RUN_NUMBER_ATTR, lost.number))
        run_dir = trial_dir(self.sweep_dir, number)
        if Path(lost.user_attrs.get(RUN_DIR_ATTR, "")) != run_dir:
            return trial.number  # a run of its own: the lost run is in another worker's sweep dir
        # (a cancelled job's run may still be saving its checkpoint: its SLURM job shows as over at once)
        wait_until_free(run_dir, HANDOVER_WAIT_S)
        if not _resumable_now(run_dir):
            return trial.number  # a run of its own: the lost run completed, or is still going
        trial.set_user_attr(RUN_NUMBER_ATTR, number)
        record = _record(run_dir)
        step = None if record is None else record.steps
        log.info(
            "trial %d continues the run of trial %d (%s) from its checkpoint%s",
            trial.number,
            lost.number,
            run_dir.name,
            f" at step {step}" if step else "",
        )
        return number

    def _trial_seed(self, number: int) -> int:
        """The first seed of trial ``number``; its seeds never overlap another trial's."""
        return self.seed + number * self.seeds_per_trial

    def _job_overrides(self, trial: optuna.Trial, fixed: list[str]) -> list[str]:
        """The trial's run, connected to its live trial in the study (for reports and pruning).

        hparams=search declares the env_set keys, so they go as plain ``hydra.*`` overrides that the
        launchers leave out of each trial's line; without it they must be added (``++``). The storage's
        URL, which may hold a password, is not among them: Hydra writes env_set into each trial's .hydra/
        (the jobs find it in the environment that the sweeper sets, which every launcher passes on)."""
        declared = OmegaConf.select(self.config, "hydra.job.env_set", default=None) or {}
        env = {ENV_STUDY: f"'{self.study_name}'", ENV_TRIAL: trial._trial_id}
        run = self._runs.get(trial.number, trial.number)
        return [
            *self._run_overrides(trial, fixed, self._trial_seed(run), str(trial_dir(Path(), run))),
            *(f"{'' if key in declared else '++'}hydra.job.env_set.{key}={value}" for key, value in env.items()),
        ]

    @staticmethod
    def _recorded_outcome(trial: optuna.Trial, err: Exception) -> JobReturn:
        """How a trial ended, from its run dir, when the launcher failed its whole batch: submitit's
        launcher raises for the first job that died (cancelled, preempted, out of memory) and drops the
        results of the others, which their run dirs still hold."""
        run_dir = Path(trial.user_attrs[RUN_DIR_ATTR])
        if (run_dir / TRIAL_FILE).is_file():  # several seeds, all completed
            value = json.loads((run_dir / TRIAL_FILE).read_text())["mean"]
            return JobReturn(status=JobStatus.COMPLETED, _return_value=value)

        records = {d: _record(d) for d in [run_dir, *sorted(run_dir.glob(f"{SEED_DIR_PREFIX}*"))]}
        record = records[run_dir]
        if record is not None and record.status == COMPLETED and record.final_score is not None:
            return JobReturn(status=JobStatus.COMPLETED, _return_value=record.final_score)
        if any(r is not None and r.status == PRUNED for r in records.values()):
            return JobReturn(status=JobStatus.FAILED, _return_value=optuna.TrialPruned())
        return JobReturn(status=JobStatus.FAILED, _return_value=err)

    def _tell(self, study: optuna.Study, trial: optuna.Trial, ret: Any) -> None:
        result = ret._return_value  # the value, or the exception of a failed job
        if isinstance(result, optuna.TrialPruned):
            study.tell(trial, state=TrialState.PRUNED)
            log.info("trial %d pruned", trial.number)
        elif isinstance(result, Diverged):  # its hyperparameters are bad, not the search: no failure counted
            trial.set_user_attr("fail_reason", " ".join(str(result).split())[:1000])
            study.tell(trial, state=TrialState.PRUNED)
            log.warning("trial %d pruned: %s", trial.number, result)
        elif isinstance(result, BaseException):
            trial.set_user_attr("fail_reason", f"{type(result).__name__}: {' '.join(str(result).split())}"[:1000])
            study.tell(trial, state=TrialState.FAIL)
            log.warning("trial %d failed: %s", trial.number, result)
        elif result is None or not math.isfinite(float(result)):
            trial.set_user_attr("fail_reason", f"objective is {result}")
            study.tell(trial, state=TrialState.FAIL)
            log.warning("trial %d failed: objective is %s", trial.number, result)
        else:
            study.tell(trial, float(result))
            log.info("trial %d: %.4g (best %.4g)", trial.number, float(result), study.best_value)

    def _check_failure_rate(self, study: optuna.Study) -> None:
        done = finished_trials(study)
        failed = [t for t in done if t.state == TrialState.FAIL]
        # judged once a few trials finished, so that one early failure does not end the search
        if len(done) >= max(4, self.n_jobs) and len(failed) / len(done) > self.max_failure_rate:
            reasons = "; ".join(f"trial {t.number}: {t.user_attrs.get('fail_reason', '?')}" for t in failed[-3:])
            raise ConfigError(
                f"{len(failed)} of {len(done)} trials failed, above hydra.sweeper.max_failure_rate="
                f"{self.max_failure_rate} ({reasons})"
            )


def _stopped_at(trial: optuna.Trial) -> int | None:
    """The step at which a signal stopped the trial's run (None: it saved nothing, or never started)."""
    record = _record(Path(trial.user_attrs[RUN_DIR_ATTR]))
    return record.steps if record is not None and record.status == INTERRUPTED else None


def _record(run_dir: Path) -> RunRecord | None:
    """The run's record; None when it has none, or an unreadable one (that run's outcome is unknown)."""
    try:
        return read_record(run_dir)
    except ConfigError:
        return None


def _best_value(study: optuna.Study) -> float | None:
    """(By value: trials tied for the best are equally the best, whichever one a storage returns.)"""
    complete = [t for t in study.get_trials(deepcopy=False) if t.state == TrialState.COMPLETE]
    return study.best_value if complete else None


def _shown_override(override: str) -> str:
    key, _, value = override.partition("=")
    return f"{key}={shown(value)}" if key.lstrip("+") == "hydra.sweeper.storage" else override


def _argv_shown() -> list[str]:
    """This command's arguments as rlexp prints and records them (the storage's password as ***)."""
    return [_shown_override(word) for word in sys.argv[1:]]


def _resumable_now(run_dir: Path) -> bool:
    """A lost trial's run that a new trial can continue: interrupted (saved on a signal), or abandoned
    (its process is gone: the lock is free, or its SLURM job is over), with no process holding it now.
    A run that completed, or whose process may still run (a local job that outlived its sweeper, a
    requeued SLURM job), is left alone: the new trial runs on its own."""
    record = _record(run_dir)
    if record is None or is_free(run_dir) is False:
        return False
    return record.status == INTERRUPTED or abandoned(record, run_dir)
