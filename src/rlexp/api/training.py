"""rlexp.train: one run through the command's own path (Hydra's run, the front door, the manager)."""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from omegaconf import DictConfig

from rlexp.api.compose import checked_overrides, overrides_of, user_error
from rlexp.api.runs import Run
from rlexp.commands.console import ConsoleFormatter
from rlexp.config.overrides import as_override
from rlexp.errors import ConfigError, Refused
from rlexp.run.hydra_session import hydra_session
from rlexp.rundir.contract import LOG_FILE

# as the command's job logging (conf/hydra/job_logging/rlexp.yaml): RUN/rlexp.log with time and source
_FORMAT = "[%(asctime)s][%(name)s][%(levelname)s] - %(message)s"


def train(config: DictConfig | Sequence[str] = (), run_dir: str | Path | None = None) -> Run:
    """Trains one run as ``rlexp <overrides>`` does and returns it.

    ``config``: overrides (``["algo=sac", "env=pendulum"]``) or a config from ``rlexp.compose``, changed
    or not; ``run_dir``: where the run goes (default: the command's ``outputs/<algo>-<env>/<time>``); a dir
    holding a stopped run resumes it. A bad config raises ``rlexp.ConfigError`` with the command's line
    and leaves no run dir; a run that meets a NaN raises ``Diverged``; a stop signal ``Interrupted``
    (its checkpoint resumes). Hydra's global state, the signal handlers and torch's thread count are
    as before the call once it returns or raises."""
    import torch
    from hydra.errors import HydraException
    from hydra.types import RunMode
    from omegaconf.errors import OmegaConfBaseException

    from rlexp.commands.train import USER_ERRORS, train_job
    from rlexp.config.hydra_versions import hydra_objects

    if threading.current_thread() is not threading.main_thread():
        raise ConfigError("rlexp.train runs in the main thread (a run stops on signals, which only it receives)")
    overrides = overrides_of(config) if isinstance(config, DictConfig) else checked_overrides(config)
    if run_dir is not None:
        overrides.append(as_override("hydra.run.dir", str(Path(run_dir).absolute())))
    threads = torch.get_num_threads()
    with hydra_session() as hydra:
        try:
            mode = hydra.compose_config("config", overrides, run_mode=RunMode.RUN).hydra.mode
            if mode == RunMode.MULTIRUN:
                raise ConfigError(
                    "rlexp.train trains one run, and these overrides make a sweep (hparams=search?): run it with "
                    "the command, rlexp -m ..."
                )
            with _logged(), hydra_objects():  # (Hydra builds the run's callbacks)
                done = hydra.run(
                    config_name="config",
                    task_function=functools.partial(train_job, exit_on_error=False),
                    overrides=overrides,
                    with_log_configuration=False,
                )
        except Refused as refused:  # by the front door, before any run dir existed
            err = refused.error
            raise (user_error(err) if isinstance(err, USER_ERRORS) else err) from None
        except (HydraException, OmegaConfBaseException) as err:
            raise user_error(err) from None
        finally:
            torch.set_num_threads(threads)
    return Run(Path(done.hydra_cfg.hydra.runtime.output_dir))


@contextmanager
def _logged() -> Iterator[None]:
    """rlexp's log lines to the console and RUN/rlexp.log as the command writes them, without changing
    the caller's logging (its root logger's handlers and level)."""
    from hydra.core.hydra_config import HydraConfig

    logger = logging.getLogger("rlexp")
    saved = logger.level, logger.propagate, list(logger.handlers)
    console = logging.StreamHandler()
    console.setFormatter(ConsoleFormatter())
    logger.handlers = [console, _RunFile(HydraConfig)]
    logger.setLevel(logging.INFO)
    logger.propagate = False
    try:
        yield
    finally:
        for handler in logger.handlers:
            handler.close()
        logger.level, logger.propagate, logger.handlers = saved[0], saved[1], saved[2]


class _RunFile(logging.Handler):
    """RUN/rlexp.log, opened at the first line (the run dir is known, and exists, once the job runs)."""

    def __init__(self, hydra_config: type) -> None:
        super().__init__()
        self.hydra_config = hydra_config
        self.file: logging.FileHandler | None = None

    def emit(self, record: logging.LogRecord) -> None:
        if self.file is None:
            if not self.hydra_config.initialized():
                return
            run_dir = Path(self.hydra_config.get().runtime.output_dir)
            if not run_dir.is_dir():
                return
            self.file = logging.FileHandler(run_dir / LOG_FILE)
            self.file.setFormatter(logging.Formatter(_FORMAT))
        self.file.emit(record)

    def close(self) -> None:
        if self.file is not None:
            self.file.close()
        super().close()
