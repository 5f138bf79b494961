"""Runs on disk, read through the run-dir contract training writes, and the verbs that read them
(evaluate, export, report) called with the command's arguments and checks."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omegaconf import DictConfig

from rlexp.errors import ConfigError

if TYPE_CHECKING:  # SB3, torch and pandas load when used
    import pandas as pd
    from stable_baselines3.common.base_class import BaseAlgorithm


class Run:
    """A run dir: its config.yaml, summary.json and saved agents (final, best, ``step_<N>``); or an RL Zoo log
    folder, read as one (rlexp.zoo.log_folders)."""

    def __init__(self, path: str | Path, trust: Sequence[str] = ()) -> None:
        from rlexp.rundir.contract import CONFIG_FILE
        from rlexp.zoo.path_kinds import what_is

        self.dir = Path(path)
        self.trust = list(trust)  # packages its config may name beyond rlexp's allow-list (rlexp.rundir.trust)
        found = what_is(self.dir)
        self._zoo = found.zoo
        if not found.configured and self._zoo is None:
            raise ConfigError(f"{path}: no {CONFIG_FILE} (not an rlexp run dir, nor an RL Zoo log folder)")

    def __repr__(self) -> str:
        return f"Run({str(self.dir)!r})"

    @property
    def summary(self) -> dict[str, Any]:
        """summary.json as it is now (status, scores, steps, versions...); its status is ``status``'s."""
        from rlexp.rundir.contract import read_summary
        from rlexp.zoo.log_folders import ZOO_SUMMARY_KEYS, zoo_summary

        if self._zoo is not None:
            record = zoo_summary(self._zoo).to_json()
            return {key: record[key] for key in ZOO_SUMMARY_KEYS if key in record}
        summary = read_summary(self.dir, remedy="not a run dir of this rlexp?")
        if summary is None:
            raise ConfigError(f"{self.dir}: no summary.json (the run never started)")
        return {**summary, "status": self._status(summary)}

    @property
    def status(self) -> str:
        """running, completed, interrupted, failed, pruned, aborted; or died: summary.json says running
        but the run's process is gone (killed, out of memory). ``continue_command`` continues one that can."""
        return str(self.summary.get("status", ""))

    @property
    def continue_command(self) -> str | None:
        """The command that continues a run that died or was stopped, from its newest checkpoint (its
        command.txt); None for any other run, or one that saved no checkpoint."""
        from rlexp.lifecycle.state import unfinished
        from rlexp.rundir.record import read_record

        record = None if self._zoo is not None else read_record(self.dir, remedy="not a run dir of this rlexp?")
        left = None if record is None else unfinished(record, self.dir)
        return None if left is None or left.step is None else left.command

    def _status(self, summary: dict[str, Any]) -> str:
        from rlexp.lifecycle.state import status_now
        from rlexp.rundir.record import RunRecord

        return status_now(RunRecord.from_json(summary), self.dir)

    @property
    def config(self) -> DictConfig:
        """The config the run trained with (config.yaml, typed by the schema)."""
        from rlexp.rundir.contract import read_config
        from rlexp.zoo.log_folders import zoo_config

        if self._zoo is not None:
            return zoo_config(self._zoo)
        return read_config(self.dir, remedy="not a run dir of this rlexp?")  # (data: nothing built from it)

    def load_agent(self, which: str = "final") -> BaseAlgorithm:
        """The agent ``which`` (final, best or ``step_<N>``), its env the run's eval env with the agent's
        VecNormalize statistics, frozen: ``env = model.get_env(); model.predict(env.reset())``."""
        from rlexp.builders.envs import build_vec_env
        from rlexp.loading.agent import load_saved_agent
        from rlexp.zoo.saved_agents import open_agent  # (rlexp run dirs and RL Zoo log folders)

        agent = open_agent(str(self.dir), which, self.trust)
        env = build_vec_env(
            agent.cfg.env, agent.cfg.seed, None, agent.stats, for_eval=True, n_envs=1, trust=agent.trust
        )
        return load_saved_agent(agent, env=env)

    def evaluate(self, **options: Any) -> dict[str, Any]:
        """``rlexp evaluate RUN`` with ``options`` as its flags (episodes=100, agent="final", seed=None,
        stochastic=False, n_envs=None); returns the record it writes to RUN/eval/*.json (mean, IQM, their
        95% CIs, returns...)."""
        from rlexp.commands import evaluate

        with _torch_threads_kept():
            record, _ = evaluate.score(_arguments("evaluate", [str(self.dir)], {"trust": self.trust, **options}))
        return record

    def export(self, **options: Any) -> Path:
        """``rlexp export RUN`` with ``options`` as its flags (agent="final", format="all", out=None,
        check_episodes=5, quantize=None); returns the export's dir (policy.onnx, policy.pt, policy.json,
        parity.json). A failed parity check raises ConfigError and keeps the earlier export."""
        from rlexp.commands import export

        argv = [str(self.dir), *_flags({"trust": self.trust, **options})]
        with _torch_threads_kept():
            _, out, _ = export.export(_arguments("export", argv, {}), argv)
        return out


def load_run(path: str | Path, trust: Sequence[str] = ()) -> Run:
    """The run in ``path`` (a run dir, also a search trial's or a SLURM job's). Opening it builds nothing
    its config names outside rlexp's allow-list unless ``trust`` names the package (or RLEXP_TRUST does)."""
    return Run(path, trust)


def report(paths: Sequence[str | Path], **options: Any) -> dict[str, pd.DataFrame]:
    """``rlexp report PATHS`` with ``options`` as its flags (group_by=None: by config, metric="final", target=None,
    baseline=None, reference=False, out=None, reps=50000, ci=0.95, seed=0, format="png"); writes the report's dir as
    the command does and returns its tables as pandas DataFrames: groups (per group and env: IQM, mean...,
    each with its CI as ``<name>_low`` and ``<name>_high``), aggregate (over envs), comparisons (pairs of groups: difference, p-value, power),
    reference_verdicts (with reference=True: each group against its reference), zoo_published (with
    reference=True: RL Zoo's published score beside each group of a tuned pair without one) and runs (one row per run,
    its group and score). Needs pandas: pip install 'rlexp[pandas]'."""
    try:
        import pandas as pd
    except ImportError:
        raise ConfigError("rlexp.report returns pandas DataFrames: pip install 'rlexp[pandas]'") from None
    from rlexp.commands import report as report_command

    if isinstance(paths, (str, Path)):
        paths = [paths]
    made, _ = report_command.make(_arguments("report", [str(p) for p in paths], options))
    return {table: pd.DataFrame([_flat(row) for row in rows]) for table, rows in made.tables().items()}


def _flat(row: dict[str, Any]) -> dict[str, Any]:
    """An estimate ``{"value", "low", "high"}`` as three columns: iqm, iqm_low, iqm_high."""
    out: dict[str, Any] = {}
    for key, value in row.items():
        if isinstance(value, dict) and set(value) == {"value", "low", "high"}:
            out.update({key: value["value"], f"{key}_low": value["low"], f"{key}_high": value["high"]})
        else:
            out[key] = value
    return out


def _flags(options: dict[str, Any]) -> list[str]:
    """``n_envs=4`` -> ``--n-envs 4``; True -> the bare flag; False and None -> left out."""
    out = []
    for name, value in options.items():
        flag = "--" + name.replace("_", "-")
        if value is True:
            out.append(flag)
        elif isinstance(value, (list, tuple)):  # group_by=["algo", "seed"] -> --group-by algo,seed
            out += [flag, ",".join(str(v) for v in value)] if value else []
        elif value is not None and value is not False:
            out += [flag, str(value)]
    return out


def _arguments(verb: str, positional: list[str], options: dict[str, Any]) -> Any:
    from rlexp.commands import verb_arguments

    return verb_arguments(verb, [*positional, *_flags(options)])


@contextmanager
def _torch_threads_kept() -> Iterator[None]:
    """The verbs set torch's threads for their work (the run's setting); the caller's count comes back."""
    import torch

    threads = torch.get_num_threads()
    try:
        yield
    finally:
        torch.set_num_threads(threads)
