"""SB3's logger of a run: the formats asked for (logger.formats), the trackers' writers beside them, and
for a resumed run files that grow instead of starting over."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from stable_baselines3.common.logger import (
    CSVOutputFormat,
    HumanOutputFormat,
    JSONOutputFormat,
    KVWriter,
    Logger,
    configure,
    make_output_format,
)

from rlexp.rundir.contract import LOG_TXT, PROGRESS_CSV, PROGRESS_JSON


class ContinuedCSVOutputFormat(CSVOutputFormat):
    """SB3's progress.csv writer, continuing the file of the run's earlier part instead of truncating it
    (rows logged after the resume step, by a part that died without a checkpoint there, are dropped)."""

    def __init__(self, filename: str, upto_step: int) -> None:
        self.file = open(filename, "r+" if os.path.isfile(filename) else "w+")  # noqa: SIM115 (closed by Logger)
        lines = self.file.readlines()
        self.keys = lines[0].strip().split(",") if lines else []
        if "time/total_timesteps" in self.keys:
            col = self.keys.index("time/total_timesteps")
            kept = [line for line in lines[1:] if _step_of(line, col) <= upto_step]
            if len(kept) < len(lines) - 1:
                self.file.seek(0)
                self.file.writelines([lines[0], *kept])
                self.file.truncate()
        self.file.seek(0, os.SEEK_END)
        self.separator, self.quotechar = ",", '"'


def _step_of(line: str, col: int) -> float:
    try:
        return float(line.split(",")[col])
    except (IndexError, ValueError):
        return 0.0


class _AppendingJSONOutputFormat(JSONOutputFormat):
    def __init__(self, filename: str) -> None:
        self.file = open(filename, "a")  # noqa: SIM115 (closed by Logger)


def continued_logger(folder: Path, formats: list[str], upto_step: int) -> Logger:
    """A logger for a resumed run: progress.csv, log.txt and progress.json grow; TensorBoard adds an
    events file whose steps continue where the earlier part stopped."""
    folder.mkdir(parents=True, exist_ok=True)
    outputs: list[KVWriter] = []
    for f in formats:
        if f == "csv":
            outputs.append(ContinuedCSVOutputFormat(str(folder / PROGRESS_CSV), upto_step))
        elif f == "log":
            outputs.append(HumanOutputFormat(open(folder / LOG_TXT, "a")))  # noqa: SIM115 (closed by Logger)
        elif f == "json":
            outputs.append(_AppendingJSONOutputFormat(str(folder / PROGRESS_JSON)))
        else:
            outputs.append(make_output_format(f, str(folder)))
    return Logger(str(folder), outputs)


def run_logger(
    formats: list[str], verbose: int, logs_dir: Path, writers: Sequence[KVWriter], resume_step: int | None = None
) -> Logger:
    """The logger of a run: logger.formats in ``logs_dir`` (SB3's tables on stdout too with
    logger.verbose=2), then ``writers`` (the trackers'); ``resume_step``: a resumed run's, whose files
    continue from that step."""
    formats = list(formats)
    if verbose >= 2 and "stdout" not in formats:  # SB3's tables
        formats.insert(0, "stdout")
    if resume_step is not None:
        logger = continued_logger(logs_dir, formats, resume_step)
    else:
        logger = configure(str(logs_dir), formats)
    logger.output_formats += writers
    return logger
