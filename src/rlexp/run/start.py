"""The start of a run: what it will train with said in a line each, torch's threads set, and its record
opened: new, with config.yaml and command.txt, or the record of the run it continues in that dir."""

from __future__ import annotations

import logging
import shlex
from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig

from rlexp.cluster.cpus import cnn_on_envpool, job_threads
from rlexp.config.tuned import tuned_note
from rlexp.monitor.evaluation import schedule_note
from rlexp.run.record import RunRecord
from rlexp.rundir.contract import write_config
from rlexp.rundir.resume import ResumePoint
from rlexp.rundir.state import resumable_run
from rlexp.vecenvs.choice import vec_env_note

log = logging.getLogger("rlexp.run.manager")  # (the run's own lines, under one name)


def start_run(
    cfg: DictConfig, run_dir: Path, choices: dict[str, Any], command: list[str], rerun: list[str], warnings: list[str]
) -> tuple[RunRecord, ResumePoint | None]:
    """The run's record, new or of the run it continues (and where that stopped), written to the run dir."""
    log.info(tuned_note(cfg, choices))
    log.info(vec_env_note(cfg.env))
    note = schedule_note(cfg)
    if note is not None:
        log.info(note)
    for warning in warnings:
        log.warning(warning)
    threads = job_threads(cfg.torch_threads, cnn_on_envpool(cfg.env.vec_env, str(cfg.algo.policy)))
    torch.set_num_threads(threads)
    previous = resumable_run(cfg, run_dir)
    if previous is None:
        write_config(run_dir, cfg, shlex.join(rerun))
        record, resume = RunRecord.start(cfg, choices, run_dir, command, threads, warnings), None
    else:
        record, resume = RunRecord.from_json(previous[0]), previous[1]
        record.resume(resume.step, threads, cfg)
        log.info("resuming the run in %s from step %d (%s)", run_dir, resume.step, resume.path.name)
    record.write()
    return record, resume
