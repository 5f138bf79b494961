"""A private, throw-away PostgreSQL server from Debian's postgresql package, started by hand (no systemd),
as root: for the tests' shared studies (tests/conftest.py) and the search benchmark (benchmarks/)."""

from __future__ import annotations

import contextlib
import secrets
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path


def postgres_bin() -> Path | None:
    """The newest installed PostgreSQL's bin dir (Debian: /usr/lib/postgresql/<version>/bin)."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"))
    return found[-1].parent if found else None


class Postgres:
    """A private PostgreSQL server (Debian's postgresql package): the `postgres` OS user, a fresh data dir
    on a free port, fsync off (throw-away data). ``stop()`` and ``start()`` let a test take it away."""

    def __init__(self, pg_bin: Path) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.pg_bin = pg_bin
        self.root = Path(tempfile.mkdtemp(prefix="rlexp-pg-"))
        shutil.chown(self.root, "postgres", "postgres")
        self.data = self.root / "data"
        self.password = f"pw-{secrets.token_hex(6)}"  # (one no file or line may hold: tests grep for it)
        self.url = f"postgresql://optuna:{self.password}@127.0.0.1:{self.port}/optuna"
        self._as_postgres("initdb", "-D", str(self.data), "-U", "postgres", "--auth-local=trust", "--auth-host=md5")
        with open(self.data / "postgresql.conf", "a") as conf:
            conf.write(
                f"listen_addresses='127.0.0.1'\nport={self.port}\nunix_socket_directories='{self.root}'\n"
                "fsync=off\nsynchronous_commit=off\nfull_page_writes=off\nmax_connections=100\n"
            )
        self.start()
        self.psql(f"CREATE ROLE optuna LOGIN PASSWORD '{self.password}'")
        self.psql("CREATE DATABASE optuna OWNER optuna")

    def _as_postgres(self, program: str, *args: str) -> str:
        return subprocess.run(
            ["runuser", "-u", "postgres", "--", str(self.pg_bin / program), *args],
            check=True,
            capture_output=True,
            text=True,
            cwd="/",
            timeout=120,
        ).stdout

    def psql(self, sql: str, database: str = "postgres") -> str:
        """``sql``'s rows, one per line, fields split by |."""
        where = ["-h", str(self.root), "-p", str(self.port), "-U", "postgres", "-d", database]
        return self._as_postgres("psql", *where, "-v", "ON_ERROR_STOP=1", "-At", "-c", sql)

    def start(self) -> None:
        self._as_postgres(
            "pg_ctl", "-D", str(self.data), "-l", str(self.root / "server.log"), "-w", "-t", "60", "start"
        )

    def stop(self) -> None:
        self._as_postgres("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")

    def remove(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError):
            self.stop()
        shutil.rmtree(self.root, ignore_errors=True)
