"""The `rlexp` command as a process of its own, without paying its imports each time.

A fork server that imported rlexp's training path once (about 1.5 s per command, 3 s under load) forks one
process per command: its own working dir, environment, argv, stdout and stderr, exit status and atexit
handlers, as `python -m rlexp` has them. A command whose environment changes what rlexp reads at import
(HYDRA_FULL_ERROR, PYTHONPATH) runs in a fresh interpreter instead, as every command does with RLEXP_TEST_FRESH=1;
the tests that send signals start theirs with subprocess.Popen.
"""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import tempfile
from pathlib import Path

# (torch._dynamo: torch imports it at a model's first optimizer, 1-1.5 s that every training would pay again)
PRELOAD = ["rlexp.__main__", "rlexp.cli", "rlexp.commands.train", "rlexp.run.manager", "torch._dynamo"]
# what the server's imports were made with: a command given another value runs in a fresh interpreter
# (HYDRA_FULL_ERROR: rlexp.commands.train.FULL_ERROR; PYTHONPATH: a test that hides or adds a package)
READ_AT_IMPORT = ("HYDRA_FULL_ERROR", "PYTHONPATH", "PYTHONHOME", "PYTHONSAFEPATH", "PYTHONNOUSERSITE")

_context: multiprocessing.context.ForkServerContext | None = None


def _server() -> multiprocessing.context.ForkServerContext:
    """The fork server, started once per test process, its imports made without what rlexp reads at import."""
    global _context
    if _context is None:
        import multiprocessing.forkserver

        _context = multiprocessing.get_context("forkserver")
        _context.set_forkserver_preload(PRELOAD)
        kept = {key: os.environ.pop(key) for key in ("HYDRA_FULL_ERROR",) if key in os.environ}
        try:
            multiprocessing.forkserver.ensure_running()
        finally:
            os.environ.update(kept)
    return _context


def _command(args: list[str], cwd: str, env: dict[str, str], out: str, err: str) -> None:
    """The forked process: `python -m rlexp ARGS` from here on."""
    import atexit

    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    for fd, path in ((1, out), (2, err)):
        target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(target, fd)
        os.close(target)
    sys.argv = [str(Path(sys.modules["rlexp.__main__"].__file__)), *args]
    code: object = 0
    try:
        from rlexp.__main__ import console

        console()
    except SystemExit as stop:
        code = stop.code
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        atexit._run_exitfuncs()  # (multiprocessing's children end with os._exit, which skips them)
        sys.stdout.flush()
        sys.stderr.flush()
    if code is not None and not isinstance(code, int):
        print(code, file=sys.stderr)
        sys.stderr.flush()
        code = 1
    os._exit(code or 0)


def run_rlexp(args: list[str], cwd: Path, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess:
    """`python -m rlexp ARGS` in ``cwd`` with exactly the environment ``env``, as subprocess.run(...,
    capture_output=True, text=True) would return it."""
    server = {**{key: os.environ[key] for key in READ_AT_IMPORT if key in os.environ}, "HYDRA_FULL_ERROR": None}
    if any(env.get(key) != server.get(key) for key in READ_AT_IMPORT) or os.environ.get("RLEXP_TEST_FRESH") == "1":
        return subprocess.run(
            [sys.executable, "-m", "rlexp", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
        )
    with tempfile.TemporaryDirectory(prefix="rlexp-cli-") as scratch:
        out, err = Path(scratch, "stdout"), Path(scratch, "stderr")
        process = _server().Process(target=_command, args=(list(args), str(cwd), dict(env), str(out), str(err)))
        process.start()
        process.join(timeout)
        if process.is_alive():
            process.kill()
            process.join()
            raise subprocess.TimeoutExpired([sys.executable, "-m", "rlexp", *args], timeout)
        stdout = out.read_text() if out.exists() else ""
        stderr = err.read_text() if err.exists() else ""
    code = process.exitcode if process.exitcode is not None else -1
    return subprocess.CompletedProcess([sys.executable, "-m", "rlexp", *args], code, stdout, stderr)
