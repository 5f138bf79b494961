"""logger.mlflow: an MLflow run per rlexp run, in a SQLite store in the working directory by default."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from enum import Enum
from pathlib import Path
from typing import Any

from stable_baselines3.common.logger import KVWriter

from rlexp.config.schema import MlflowConfig
from rlexp.rundir.contract import (
    COMMAND_FILE,
    COMPLETED,
    CONFIG_FILE,
    FAILED,
    MODEL_FILE,
    SUMMARY_FILE,
    VECNORMALIZE_FILE,
)
from rlexp.rundir.record import RunRecord
from rlexp.trackers.writer import scalars

DEFAULT_STORE = "mlruns.db"  # sqlite:///<working dir>/mlruns.db
MAX_PARAM = 6000  # characters of a param's value that MLflow keeps (longer ones are cut, with "...")


def tracking_uri(mlflow_cfg: MlflowConfig, earlier: dict[str, Any] | None = None) -> str:
    """The store: logger.mlflow.tracking_uri, else the one a resumed run started on, else MLflow's
    MLFLOW_TRACKING_URI, else SQLite in the working directory."""
    return (
        mlflow_cfg.tracking_uri
        or (earlier or {}).get("tracking_uri")
        or os.environ.get("MLFLOW_TRACKING_URI")
        or f"sqlite:///{Path.cwd() / DEFAULT_STORE}"
    )


@contextmanager
def _store_lock(uri: str) -> Iterator[None]:
    """Jobs of one multirun starting together on one SQLite store: its schema and the experiment are
    created by one of them at a time (both race otherwise: mlflow #4123)."""
    if not uri.startswith("sqlite:///"):
        yield
        return
    lock = Path(uri.removeprefix("sqlite:///") + ".lock")
    lock.parent.mkdir(parents=True, exist_ok=True)
    with lock.open("a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def flat_params(config: dict[str, Any]) -> dict[str, str]:
    """The composed config (as plain data: rlexp.config.plain.plain_dict) as MLflow params: dotted keys,
    values as strings (an enum by its name)."""
    out: dict[str, str] = {}

    def walk(node: Any, prefix: str) -> None:
        if isinstance(node, dict) and node:
            for key, value in node.items():
                walk(value, f"{prefix}{key}.")
        else:
            text = node.name if isinstance(node, Enum) else str(node)
            out[prefix.rstrip(".")] = text if len(text) <= MAX_PARAM else text[: MAX_PARAM - 3] + "..."

    walk(config, "")
    return out


class MlflowTracker:
    name = "mlflow"

    def __init__(
        self, m: MlflowConfig, run_dir: Path, earlier: dict[str, Any] | None, run: RunRecord, config: dict[str, Any]
    ) -> None:
        """``m``: logger.mlflow; ``earlier``: summary.json's record of the MLflow run a resumed run continues;
        ``run``: the run's record (its algorithm, env id and seed tag a new MLflow run); ``config``: the
        composed config as plain data, logged whole as the run's params."""
        from mlflow.entities import Param, RunTag
        from mlflow.tracking import MlflowClient

        uri = tracking_uri(m, earlier)
        # a server that is down costs seconds, not MLflow's default of minutes of retries per call
        os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "2")
        os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "30")
        with _store_lock(uri):
            self.client = MlflowClient(tracking_uri=uri)
            experiment = self.client.get_experiment_by_name(m.experiment)
            experiment_id = experiment.experiment_id if experiment else self.client.create_experiment(m.experiment)
        resumed = (earlier or {}).get("run_id") if (earlier or {}).get("tracking_uri") == uri else None
        if resumed is not None:  # resumed: the same MLflow run goes on
            self.run_id = resumed
            self.client.update_run(self.run_id, status="RUNNING")
        else:
            from rlexp.rundir.provenance import git_commit

            tags = {
                "algo": run.algo_class.rsplit(".", 1)[-1],  # (the class that trains: rlexp.builders.backends)
                "env": str(run.env_id),
                "seed": str(run.seed),
                "rlexp.run_dir": str(run_dir.resolve()),
            }
            commit = git_commit(Path.cwd())
            if commit is not None:
                tags["mlflow.source.git.commit"] = commit["commit"]
            created = self.client.create_run(experiment_id, run_name=m.run_name or run_name(run_dir), tags=tags)
            self.run_id = created.info.run_id
            try:
                params = [Param(k, v) for k, v in flat_params(config).items()]
                for i in range(0, len(params), 100):  # (MLflow takes at most 100 params a batch)
                    self.client.log_batch(self.run_id, params=params[i : i + 100])
                self.client.log_batch(self.run_id, tags=[RunTag("rlexp.command", " ".join(cfg_command(run_dir)))])
            except Exception:  # not left RUNNING, unrecorded: the run goes on without it
                self.client.set_terminated(self.run_id, status="FAILED")
                raise
        self.record = {"run_id": self.run_id, "experiment": m.experiment, "tracking_uri": uri}

    def writer(self) -> KVWriter:
        return _Writer(self.client, self.run_id)

    def finish(self, run_dir: Path, run: RunRecord) -> None:
        """The final agent, its statistics and summary.json as artifacts; the run's status."""
        if run.status == COMPLETED:
            for name in (MODEL_FILE, VECNORMALIZE_FILE, SUMMARY_FILE, CONFIG_FILE):
                if (run_dir / name).is_file():
                    self.client.log_artifact(self.run_id, str(run_dir / name))
            if run.final_score is not None:
                self.client.log_metric(self.run_id, "final_eval/mean", run.final_score, step=run.steps or 0)
        status = {COMPLETED: "FINISHED", FAILED: "FAILED"}.get(run.status, "KILLED")
        self.client.set_terminated(self.run_id, status=status)


def run_name(run_dir: Path) -> str:
    """The run dir's name; a multirun job's (0, 1, ...) with its sweep dir's: seeds/0."""
    return f"{run_dir.parent.name}/{run_dir.name}" if run_dir.name.isdigit() else run_dir.name


def cfg_command(run_dir: Path) -> list[str]:
    path = run_dir / COMMAND_FILE
    return [path.read_text().strip()] if path.is_file() else []


class _Writer(KVWriter):
    """SB3's scalars to the MLflow run, with SB3's step."""

    def __init__(self, client: Any, run_id: str) -> None:
        self.client, self.run_id = client, run_id

    def write(self, key_values: dict[str, Any], key_excluded: dict[str, Any], step: int = 0) -> None:
        from mlflow.entities import Metric

        found = scalars(key_values, key_excluded, "mlflow")
        if found:
            import time

            now = int(time.time() * 1000)
            self.client.log_batch(self.run_id, metrics=[Metric(k, v, now, step) for k, v in found.items()])

    def close(self) -> None:
        pass
