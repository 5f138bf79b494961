"""The Optuna storage of a search, opened as a lab's shared study needs it: a damaged SQLite file refused,
a server that is briefly unreachable waited for, and few connections per worker however large the study.

One study is shared by many processes: a sweeper per SLURM array task, and its trials' jobs. Each
process opens one storage per URL (its jobs reuse the sweeper's) and its SQLAlchemy pool keeps one
connection, opening up to MAX_CONNECTIONS only while threads use it at once, so that dozens of workers
stay far below a PostgreSQL server's ``max_connections`` (100 by default). A server that refuses
connections (restarting, failing over, overloaded) is retried with backoff for RETRY_SECONDS
(``RLEXP_STORAGE_RETRY_S``) before the search stops with one line; only errors raised before a
statement reached the server are retried, so that nothing is written twice.
"""

from __future__ import annotations

import functools
import logging
import os
import random
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from optuna.storages import BaseStorage, JournalStorage, RDBStorage
from optuna.storages.journal import JournalFileBackend

from rlexp.errors import ConfigError, collapsed

log = logging.getLogger(__name__)
JOURNAL_PREFIX = "journal:///"
RETRY_SECONDS = 60.0  # how long a server that refuses connections is retried (RLEXP_STORAGE_RETRY_S)
MAX_CONNECTIONS = 3  # per process and storage: 1 kept open, 2 more while threads use it at once
# what a driver says when no statement could reach the server: safe to retry, nothing was written
UNREACHABLE = (
    "could not connect",
    "connection refused",
    "the database system is starting up",
    "the database system is shutting down",
    "the database system is in recovery mode",
    "too many connections",
    "too many clients",
    "remaining connection slots are reserved",
    "can't connect to mysql server",
    "no route to host",
)
T = TypeVar("T")
_opened: dict[str, BaseStorage] = {}
_checked: set[tuple[str, int, int]] = set()  # SQLite files found whole (path, device, inode): once a process
os.register_at_fork(after_in_child=_opened.clear)  # (a forked child must not use its parent's connections)


def retry_seconds() -> float:
    text = os.environ.get("RLEXP_STORAGE_RETRY_S")
    if text is None:
        return RETRY_SECONDS
    try:
        seconds = float(text)
    except ValueError:
        raise ConfigError(f"RLEXP_STORAGE_RETRY_S={text}: not a number of seconds") from None
    if not seconds >= 0:
        raise ConfigError(f"RLEXP_STORAGE_RETRY_S={text}: must be >= 0")
    return seconds


def unreachable(err: BaseException | None) -> bool:
    """A driver error raised while connecting: the server was not reached, no statement ran (Optuna wraps
    it in a StorageInternalError)."""
    from sqlalchemy.exc import OperationalError

    while err is not None and not isinstance(err, OperationalError):
        err = err.__cause__
    return err is not None and any(text in str(err).lower() for text in UNREACHABLE)


def retried(call: Callable[[], T], url: str) -> T:
    """``call()``, again with backoff (0.5 s doubling to 8 s) while the server is unreachable, for
    retry_seconds() in all; then its error."""
    deadline, delay = time.monotonic() + retry_seconds(), 0.5
    while True:
        try:
            return call()
        except Exception as err:
            if not unreachable(err) or time.monotonic() + delay > deadline:
                raise
            log.warning("storage %s unreachable (%s); retrying in %.1f s", shown(url), _first_line(err), delay)
            time.sleep(delay)
            delay = min(2 * delay, 8.0)


def _first_line(err: BaseException) -> str:
    cause = err.__cause__ or err
    return collapsed(str(getattr(cause, "orig", None) or cause))[:160]


def shown(url: str) -> str:
    """The URL as rlexp prints and writes it anywhere: its password, if it holds one, as ``***``."""
    from sqlalchemy.engine import make_url

    if "@" not in url:  # (no user, so no password: sqlite:///, journal:///)
        return url
    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:
        return url.split("@")[-1]


def has_password(url: str) -> bool:
    from sqlalchemy.engine import make_url

    try:
        return "@" in url and make_url(url).password is not None
    except Exception:
        return "@" in url


class RetryingRDBStorage(RDBStorage):
    """Optuna's RDB storage whose every call waits out a briefly unreachable server (see ``retried``)."""


def _with_retries(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def call(self: RDBStorage, *args: Any, **kwargs: Any) -> Any:
        return retried(lambda: method(self, *args, **kwargs), self.url)

    return call


for _name, _method in vars(RDBStorage).items():  # (its public methods: each one a transaction)
    if not _name.startswith("_") and callable(_method):
        setattr(RetryingRDBStorage, _name, _with_retries(_method))


def open_storage(url: str, attempts: int = 4) -> BaseStorage:
    """An RDB URL (sqlite:///, postgresql://, ...) or ``journal:///path`` (a journal file for shared file
    systems); a server's storage once per process (the jobs of a sweep share the sweeper's pool).

    Workers starting together on a new database race to create Optuna's tables; the loser retries.
    """
    if url in _opened:
        return _opened[url]
    for attempt in range(attempts):
        try:
            if url.startswith(JOURNAL_PREFIX):
                path = Path("/" + url[len(JOURNAL_PREFIX) :].lstrip("/"))
                path.parent.mkdir(parents=True, exist_ok=True)
                return JournalStorage(JournalFileBackend(str(path)))
            if url.startswith("sqlite"):
                check_sqlite(url)
                return RDBStorage(url, engine_kwargs={"connect_args": {"timeout": 60}})
            storage = retried(lambda: RetryingRDBStorage(url, engine_kwargs=_server_engine(url)), url)
            _opened[url] = storage
            return storage
        except ConfigError:
            raise
        except Exception as err:  # SQLAlchemy/driver errors: unreachable server, bad URL, missing driver
            if "already exists" in str(err) and attempt + 1 < attempts:
                time.sleep(0.5 + random.random())
                continue
            waited = f" (retried for {retry_seconds():.0f} s)" if unreachable(err) else ""
            raise ConfigError(
                f"hydra.sweeper.storage={shown(url)}: cannot open the storage{waited} "
                f"({type(err).__name__}: {_first_line(err)[:300]})"
            ) from None
    raise AssertionError("unreachable")  # pragma: no cover


def _server_engine(url: str) -> dict[str, Any]:
    """A small pool, checked before use (a restarted server's dead connections are replaced); on
    PostgreSQL each connection is named after its worker (pg_stat_activity's application_name)."""
    engine: dict[str, Any] = {
        "pool_pre_ping": True,
        "pool_size": 1,
        "max_overflow": MAX_CONNECTIONS - 1,
        "pool_timeout": 600,
    }
    if url.startswith("postgresql"):
        job = os.environ.get("SLURM_JOB_ID")
        name = f"rlexp {socket.gethostname()}:{os.getpid()}" + (f" slurm:{job}" if job else "")
        engine["connect_args"] = {"application_name": name[:63]}
    return engine


def check_sqlite(url: str) -> None:
    """Refuses a damaged SQLite study before anything reads or writes it: a file cut short or overwritten
    in part opens without a word in SQLite and Optuna, and a search would go on writing into it. SQLite's
    ``integrity_check`` (its quick_check misses a truncated index) reads the whole file: milliseconds for
    a study of thousands of trials."""
    import contextlib
    import sqlite3

    from sqlalchemy.engine import make_url

    database = make_url(url).database
    if not database or database == ":memory:" or not Path(database).is_file() or not Path(database).stat().st_size:
        return
    found = Path(database).resolve().stat()
    key = (str(Path(database).resolve()), found.st_dev, found.st_ino)
    if key in _checked:  # (a sweep's trials open its study again: checked when the sweep opened it)
        return
    try:
        with contextlib.closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=60)) as db:
            problems = [row[0] for row in db.execute("pragma integrity_check").fetchall()]
    except sqlite3.OperationalError as err:
        if "locked" not in str(err):
            raise ConfigError(f"hydra.sweeper.storage={url}: cannot read the SQLite file ({err})") from None
        raise ConfigError(f"hydra.sweeper.storage={url}: locked by another process for over 60 s") from None
    except sqlite3.DatabaseError as err:  # not a database at all
        problems = [str(err)]
    if problems == ["ok"]:
        _checked.add(key)
        return
    raise ConfigError(
        f"hydra.sweeper.storage={url}: the SQLite file is damaged ({collapsed(problems[0])[:200]}"
        f"{f', and {len(problems) - 1} more problems' if len(problems) > 1 else ''}): restore it from a copy, "
        "or give another storage; rlexp writes nothing into it"
    )
