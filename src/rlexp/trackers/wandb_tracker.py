"""logger.wandb: a Weights & Biases run per rlexp run, offline unless an API key is configured."""

from __future__ import annotations

import hashlib
import netrc
import os
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from stable_baselines3.common.logger import KVWriter

from rlexp.config.schema import WandbConfig
from rlexp.rundir.contract import COMPLETED, MODEL_FILE, VECNORMALIZE_FILE
from rlexp.rundir.record import RunRecord
from rlexp.trackers.writer import scalars


def default_mode() -> str:
    """online when an API key is configured (WANDB_API_KEY, or `wandb login`'s netrc entry), else offline:
    a run never stops to ask for a key."""
    if os.environ.get("WANDB_API_KEY"):
        return "online"
    host = urlparse(os.environ.get("WANDB_BASE_URL", "https://api.wandb.ai")).hostname or ""
    try:
        return "online" if netrc.netrc().authenticators(host) else "offline"
    except (OSError, netrc.NetrcParseError):
        return "offline"


def run_id(run_dir: Path, start_time: str) -> str:
    """The W&B run id of the run in a run dir: the same when it is resumed or requeued there (its start
    time is kept), another for a new run in that dir."""
    return "rlexp-" + hashlib.sha256(f"{run_dir.resolve()}@{start_time}".encode()).hexdigest()[:16]


class WandbTracker:
    name = "wandb"

    def __init__(
        self, w: WandbConfig, run_dir: Path, earlier: dict[str, Any] | None, start_time: str, config: dict[str, Any]
    ) -> None:
        """``w``: logger.wandb; ``earlier``: summary.json's record of the W&B run a resumed run continues;
        ``start_time``: when the run started; ``config``: the composed config as plain data
        (rlexp.config.plain.plain_dict), the W&B run's config."""
        import wandb

        mode = w.mode.value if w.mode is not None else os.environ.get("WANDB_MODE") or default_mode()
        # the config at init, not at finish: parallel offline runs otherwise lose it (wandb #7227)
        self.run = wandb.init(
            project=w.project or os.environ.get("WANDB_PROJECT") or "rlexp",
            entity=w.entity,
            group=w.group,
            tags=list(w.tags),
            name=w.name or (f"{run_dir.parent.name}/{run_dir.name}" if run_dir.name.isdigit() else run_dir.name),
            id=(earlier or {}).get("id") or run_id(run_dir, start_time),
            resume="allow",
            mode=mode,  # type: ignore[arg-type]  # (the schema's or WANDB_MODE: wandb refuses another)
            dir=str(run_dir),
            config=config,
            reinit="create_new",
            settings=wandb.Settings(console="off", x_disable_stats=True),
        )
        self.run.define_metric("*", step_metric="global_step")  # SB3's step, also across a resume
        self.record = {
            "id": self.run.id,
            "project": self.run.project,
            "mode": mode,
            "dir": str(Path(self.run.dir).parent),
        }

    def writer(self) -> KVWriter:
        return _Writer(self.run)

    def finish(self, run_dir: Path, run: RunRecord) -> None:
        """The final agent and its statistics as a model artifact, the scores in the run's summary."""
        import wandb

        if run.status == COMPLETED:
            artifact = wandb.Artifact(f"{self.run.id}-model", type="model")
            for name in (MODEL_FILE, VECNORMALIZE_FILE):
                if (run_dir / name).is_file():
                    artifact.add_file(str(run_dir / name))
            self.run.log_artifact(artifact)
            for key, score in (
                ("final_eval", run.final_eval),
                ("best_eval", run.best_eval),
                ("random_baseline", run.random_baseline),
            ):
                if isinstance(score, dict):
                    self.run.summary[key] = {k: v for k, v in score.items() if not isinstance(v, list)}
        self.run.summary["status"] = run.status
        self.run.finish(exit_code=0 if run.status == COMPLETED else 1)


class _Writer(KVWriter):
    """SB3's scalars to the W&B run, at SB3's step."""

    def __init__(self, run: Any) -> None:
        self.run = run

    def write(self, key_values: dict[str, Any], key_excluded: dict[str, Any], step: int = 0) -> None:
        found = scalars(key_values, key_excluded, "wandb")
        if found:
            self.run.log({**found, "global_step": step})

    def close(self) -> None:
        pass
