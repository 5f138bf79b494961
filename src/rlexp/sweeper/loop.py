"""The search loop of one sweeper: ask Optuna for trials, launch them as jobs, tell Optuna how they ended;
then the robust selection and the results.

Jobs reach their live trial through the shared storage (rlexp.search.study.job_trial) to report
evaluations and to stop when the pruner says so; the sweeper then records the trial as PRUNED."""

from __future__ import annotations

import logging
import os
import warnings
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import optuna
from hydra.plugins.launcher import Launcher
from omegaconf import DictConfig, OmegaConf

from rlexp.cluster.forked_jobs import stop_signals_raise
from rlexp.errors import ConfigError, Interrupted, Stopped
from rlexp.search.results import trial_command, trial_dir, write_results
from rlexp.search.space import parse_search_space
from rlexp.search.storage import has_password, shown
from rlexp.search.study import (
    COMMAND_ATTR,
    ENV_STORAGE,
    OWNER_ATTR,
    RUN_DIR_ATTR,
    finished_trials,
    jobs_reach,
    owner,
    reclaim_interrupted_trials,
)
from rlexp.sweeper.closing import best_value, closing_line
from rlexp.sweeper.command_line import hide_password, sweep_overrides
from rlexp.sweeper.launching import Jobs, runs_jobs_apart
from rlexp.sweeper.limits import check_failure_rate, trials_to_ask, within_cap
from rlexp.sweeper.opening import Compose, default_storage, open_study, reseed
from rlexp.sweeper.outcomes import JobOutcome, recorded_outcome, stopped_at
from rlexp.sweeper.retrain import retrain_top_trials
from rlexp.sweeper.settings import SweepSettings
from rlexp.sweeper.telling import tell, tell_or_hand_over
from rlexp.sweeper.trial_runs import job_overrides, run_number

log = logging.getLogger(__name__)
# Optuna flags e.g. multivariate TPE and its matplotlib plots as experimental, on every call
warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)


@dataclass(frozen=True)
class OpenSearch:
    """A search as this sweeper runs it: its study, the distributions searched, the overrides that fix values."""

    study: optuna.Study
    space: dict[str, Any]
    fixed: list[str]


@dataclass(frozen=True)
class TrialJob:
    """A trial asked of the study and the overrides of the job that runs it."""

    trial: optuna.Trial
    overrides: list[str]


class Sweep:
    """One sweeper's search, in steps that each handle a batch of trials: ``ask`` the study, ``launch`` their
    jobs (Hydra's launchers return once the whole batch ended), ``tell`` each trial's outcome, ``settle``
    (results written, failure rate judged). A search that launches each trial as a job frees up and tells
    each as it ends would call the same steps with one trial at a time."""

    def __init__(self, settings: SweepSettings, config: DictConfig, launcher: Launcher, compose: Compose) -> None:
        """``config``: the sweep's (Hydra's multirun config); ``compose``: its overrides composed again."""
        self.settings, self.config, self.compose = settings, config, compose
        self.jobs = Jobs(launcher)
        self.sweep_dir = Path(config.hydra.sweep.dir).resolve()
        # the pieces of the sweep's config that its steps read (the whole is kept for the space and the study)
        self.choices: dict[str, Any] = dict(OmegaConf.select(config, "hydra.runtime.choices", default=None) or {})
        self.env_set: dict[str, Any] = dict(OmegaConf.select(config, "hydra.job.env_set", default=None) or {})
        self.n_timesteps: int = config.n_timesteps
        self.storage_url = settings.storage or default_storage(self.sweep_dir)
        self.runs: dict[int, int] = {}  # trial number -> the number of the run it is (its seed, its dir)
        if settings.storage and has_password(settings.storage):
            hide_password(config, settings.storage)

    def run(self, arguments: list[str]) -> None:
        """The whole search of this sweeper, from the command's overrides (``arguments``): steady (a slot
        refilled as soon as its trial ends) where the launcher runs jobs in processes of their own and
        several run at once, else in batches of n_jobs."""
        search = self.start(arguments)
        at_once = self._steady_slots()
        with jobs_reach(self.storage_url, search.study):  # (jobs run in this process: its study)
            if at_once > 1:
                with stop_signals_raise():  # (its jobs are waited for in threads: a stop comes here)
                    self._run_steady(search, at_once)
            else:
                while trials := self.ask(search, self.settings.n_jobs):
                    for job, outcome in zip(trials, self.launch(search.study, trials), strict=True):
                        self.tell(search.study, job.trial, outcome)
                    self.settle(search.study)
            self.finish(search)

    def _steady_slots(self) -> int:
        """How many trials the steady search keeps running (0: it runs batches)."""
        launcher = self.jobs.launcher
        if self.settings.mode != "steady" or self.settings.n_jobs < 2 or not runs_jobs_apart(launcher):
            return 0
        at_once = getattr(launcher, "set_jobs_at_once", None)  # (local_parallel shares out the cores)
        return at_once(self.settings.n_jobs) if at_once is not None else self.settings.n_jobs

    def _run_steady(self, search: OpenSearch, slots: int) -> None:
        """``slots`` trials running at all times until the study has its trials: each one told as it ends,
        its slot given the next trial at once. A stop signal: the trials that ended were told, the running
        ones are queued again (handed over), the results written, and the signal raised on. Too many failed
        trials: no more are asked, and the search ends once the running ones have ended and been told."""
        study = search.study
        running: dict[Future[JobOutcome], TrialJob] = {}
        failing: ConfigError | None = None
        try:
            while True:
                free = slots - len(running) if failing is None else 0
                if free > 0:
                    for job in self.ask(search, free, running=len(running)):
                        running[self.jobs.start(job.overrides)] = job
                if not running:
                    if failing is not None:
                        raise failing
                    return
                ended, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in ended:
                    job = running.pop(future)
                    try:
                        outcome = future.result()
                    except Exception as err:  # a job's overrides do not compose, or it died without a result
                        outcome = recorded_outcome(job.trial, err)
                    self.tell(study, job.trial, outcome)
                if failing is not None:  # (the failure rate was passed: what still runs ends first, told)
                    write_results(study, self.sweep_dir, self.choices, plots=False)
                    continue
                try:
                    self.settle(study)
                except ConfigError as err:
                    failing = err
        except (Interrupted, Stopped, KeyboardInterrupt) as err:  # (Ctrl-C reaches the sweeper of process jobs as such)
            self.jobs.stop()
            for job in running.values():
                tell_or_hand_over(study, job.trial, recorded_outcome(job.trial, err))
            write_results(study, self.sweep_dir, self.choices, plots=False)
            raise

    def start(self, arguments: list[str]) -> OpenSearch:
        """The search opened (its study checked against the search it was made for); the trials an earlier
        run of this sweep left running queued again."""
        self.settings.check()
        sweeps, fixed = sweep_overrides(arguments, self.settings.seed)
        space = parse_search_space(self.settings.params, sweeps, self.config, fixed)
        if not space:
            raise ConfigError("hydra.sweeper.params is empty: nothing to search (use hparams=search)")
        study = open_study(self.settings, self.storage_url, self.config, self.sweep_dir, space, fixed, self.compose)
        os.environ[ENV_STORAGE] = self.storage_url  # (for the jobs, whichever launcher starts them)
        shared = self.storage_url != default_storage(self.sweep_dir)
        reseed(study, self.settings, self.config.hydra.sweeper.sampler, shared)
        reclaimed = reclaim_interrupted_trials(study)
        if reclaimed:
            log.info("requeued %d trial(s) interrupted by an earlier run of this sweep", reclaimed)
        done, name, wanted = len(finished_trials(study)), self.settings.study_name, self.settings.n_trials
        log.info("study %s in %s: %d of %d trials finished", name, shown(self.storage_url), done, wanted)
        if done >= wanted:  # (a sweep run again with the same study: it continues, here past its end)
            log.info("nothing to run: raise hydra.sweeper.n_trials above %d to run more trials in this study", done)
        return OpenSearch(study, space, fixed)

    def ask(self, search: OpenSearch, wanted: int, running: int = 0) -> list[TrialJob]:
        """The next trials (``wanted``, or what the study still needs besides the ``running`` ones), each with
        its run and the job that runs it recorded in the study; none when the search is done."""
        study = search.study
        if self.jobs.launched:  # (a worker of a shared study killed meanwhile: its trial runs again, here or elsewhere)
            taken = reclaim_interrupted_trials(study)
            if taken:
                log.info("requeued %d trial(s) of a sweeper that ended while they ran", taken)
        remaining = trials_to_ask(study, self.settings) - running
        if remaining <= 0:
            return []
        trials = [study.ask(search.space) for _ in range(min(wanted, remaining))]
        for trial in trials:
            trial.set_user_attr(OWNER_ATTR, owner())
            self.runs[trial.number] = run_number(study, trial, self.sweep_dir)
            trial.set_user_attr(RUN_DIR_ATTR, str(trial_dir(self.sweep_dir, self.runs[trial.number])))
        jobs = []
        for trial in within_cap(study, trials, self.settings.max_total_trials):
            run = self.runs.get(trial.number, trial.number)
            seed = self.settings.trial_seed(run)
            overrides = job_overrides(
                trial,
                search.fixed,
                n_timesteps=self.n_timesteps,
                env_set=self.env_set,
                study_name=self.settings.study_name,
                seed=seed,
                run=run,
            )
            trial.set_user_attr(COMMAND_ATTR, trial_command(overrides, self.settings.seeds_per_trial))
            jobs.append(TrialJob(trial, overrides))
        return jobs

    def launch(self, study: optuna.Study, trials: list[TrialJob]) -> list[JobOutcome]:
        """The trials' jobs run, and how each ended. A stop signal: the trials that ended are told, the others
        queued again, the results written, and the signal raised on."""
        try:
            return self.jobs.run([job.overrides for job in trials])
        except Exception as err:  # a job's overrides do not compose, or one submitit job died without a result
            return [recorded_outcome(job.trial, err) for job in trials]
        except (
            Interrupted,
            Stopped,
            KeyboardInterrupt,
        ) as err:  # a stop signal or Ctrl-C: the trials that ended count, the others run again
            for job in trials:
                tell_or_hand_over(study, job.trial, recorded_outcome(job.trial, err))
            write_results(study, self.sweep_dir, self.choices, plots=False)
            raise

    def tell(self, study: optuna.Study, trial: optuna.Trial, outcome: JobOutcome) -> None:
        """The study told how the trial ended; a job of its own stopped by a signal (submitit's launchers:
        its error, not ours) hands its trial over instead."""
        if outcome.completed or stopped_at(trial) is None:
            tell(study, trial, outcome)
        else:
            tell_or_hand_over(study, trial, outcome)

    def settle(self, study: optuna.Study) -> None:
        """The results rewritten (to be read mid-sweep); the search ended when too many trials failed."""
        results = write_results(study, self.sweep_dir, self.choices, plots=False)
        try:
            check_failure_rate(study, self.settings)
        except ConfigError:
            print(closing_line(study, results, self.sweep_dir))
            raise

    def finish(self, search: OpenSearch) -> None:
        """The robust selection when asked for, the final results (plots too), and the closing line."""
        study, winner = search.study, None
        if self.settings.retrain_top_k > 0:
            n_timesteps = self.n_timesteps
            winner = retrain_top_trials(study, self.settings, self.jobs, search.fixed, n_timesteps, self.sweep_dir)
        results = self._final_results(study, winner)
        print(closing_line(study, results, self.sweep_dir))

    def _final_results(self, study: optuna.Study, winner: int | None) -> dict[str, Any]:
        plots = self.settings.plots
        results = write_results(study, self.sweep_dir, self.choices, plots=plots, winner=winner)
        for _ in range(5):  # (bounded: workers ending one after another settle in a pass or two)
            if winner is not None or best_value(study) == (results.get("best") or {}).get("value"):
                break
            # another worker's trial ended meanwhile, the study's new best: the files and the line say so
            results = write_results(study, self.sweep_dir, self.choices, plots=plots)
        return results
