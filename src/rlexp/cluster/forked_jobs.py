"""Local jobs as processes forked from a server that imported rlexp's training path once.

A new Python process per job pays its imports (torch, SB3, Hydra, rlexp: 2-3 s here, 7-10 s on a loaded
2-core machine) and submitit's local executor adds a poll of a second before its result is seen: more
than a short search trial trains. Here each job is still a process of its own (its own torch threads,
signals, memory, exit), forked from the standard library's fork server with those modules already
imported (``multiprocessing``'s ``set_forkserver_preload``); the job's result comes back through a pipe
the moment it ends. A job that dies without a result (killed, out of memory) fails alone.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.connection
import os
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import cloudpickle

from rlexp.errors import Stopped

# what a job imports before it does anything (torch._dynamo: torch imports it at a model's first optimizer)
PRELOAD = ["rlexp.__main__", "rlexp.cli", "rlexp.commands.train", "rlexp.run.manager", "torch._dynamo"]


class JobDied(RuntimeError):
    """A job's process ended without a result (a signal, the out-of-memory killer, a crash)."""


class ForkedJobs:
    """Jobs run as processes forked from one fork server (started at the first job, ended with this
    process), each waited for in the thread that started it."""

    def __init__(self, preload: Sequence[str] = PRELOAD) -> None:
        self.preload = list(preload)
        self._context: Any = None
        self._live: set[Any] = set()
        self._lock = threading.Lock()

    def run(self, job: Callable[[], Any], env: dict[str, str], logs: Path, timeout_s: float, name: str) -> Any:
        """``job()`` in a process of its own with exactly the environment ``env``, its output in the folder
        ``logs`` (``<pid>_log.out``, ``<pid>_log.err``), sent SIGTERM past ``timeout_s``; what it returns, or
        what it raised (``JobDied`` where it ended without a word)."""
        context = self._server()
        reader, writer = context.Pipe(duplex=False)
        process = context.Process(target=_job_process, args=(cloudpickle.dumps(job), env, logs, timeout_s, writer))
        with self._lock:
            process.start()
            self._live.add(process)
        writer.close()
        try:
            try:
                sent = reader.recv_bytes()
            except EOFError:  # (it ended without a word)
                sent = None
            process.join()
        finally:
            reader.close()
            with self._lock:
                self._live.discard(process)
        if sent is None:
            raise JobDied(
                f"{name} ended without a result (exit code {process.exitcode}); its output: "
                f"{logs / f'{process.pid}_log.err'}"
            )
        ok, value = cloudpickle.loads(sent)
        if not ok:
            raise value
        return value

    def run_all(self, jobs: Sequence[Callable[[], Any]], at_once: int, **run: Any) -> list[Any]:
        """Each of ``jobs`` (``run``'s other arguments per job: ``names`` a list) with at most ``at_once``
        running; their results in order, or the first job's error once every job ended. A stop (a signal's
        exception, Ctrl-C) in this thread is passed to the running jobs as SIGTERM and raised on."""
        names = run.pop("names")
        pool = ThreadPoolExecutor(max_workers=max(1, at_once), thread_name_prefix="rlexp-job")
        futures = [pool.submit(self.run, job, name=name, **run) for job, name in zip(jobs, names, strict=True)]
        try:
            errors = [future.exception() for future in futures]
        except BaseException:
            self.stop(signal.SIGTERM)
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown()
        failed = next((err for err in errors if err is not None), None)
        if failed is not None:
            raise failed
        return [future.result() for future in futures]

    def stop(self, signum: int) -> None:
        """``signum`` to every running job (a run checkpoints at its next rollout boundary and ends)."""
        with self._lock:
            for process in self._live:
                if process.pid is not None:
                    with contextlib.suppress(ProcessLookupError):  # (it ended meanwhile)
                        os.kill(process.pid, signum)

    def _server(self) -> Any:
        if self._context is None:
            context = multiprocessing.get_context("forkserver")
            context.set_forkserver_preload(self.preload)
            self._context = context
        return self._context


@contextlib.contextmanager
def stop_signals_raise() -> Iterator[None]:
    """SIGTERM (and SLURM's SIGUSR2) to the process that waits on jobs raises Stopped in its main thread, so
    that it stops its jobs before it ends (Python's default would end it at once, the jobs left running)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, _: Any) -> None:
        raise Stopped(signum)

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGUSR2)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _job_process(
    payload: bytes, env: dict[str, str], logs: Path, timeout_s: float, result: multiprocessing.connection.Connection
) -> None:
    """The job's process: its environment and output files set, the job run, the result sent."""
    import atexit
    import sys

    os.environ.clear()
    os.environ.update(env)
    logs.mkdir(parents=True, exist_ok=True)
    for fd, suffix in ((1, "out"), (2, "err")):
        target = os.open(logs / f"{os.getpid()}_log.{suffix}", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(target, fd)
        os.close(target)
    timer = threading.Timer(timeout_s, os.kill, (os.getpid(), signal.SIGTERM))
    timer.daemon = True
    timer.start()
    try:
        sent: tuple[bool, Any] = (True, cloudpickle.loads(payload)())
    except BaseException as err:  # (the job's machinery failed, not its run: Hydra keeps a run's errors)
        sent = (False, err)
    timer.cancel()
    atexit._run_exitfuncs()  # (a forked process ends with os._exit, which skips them: trackers, logging)
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    try:
        data = cloudpickle.dumps(sent)
    except Exception as err:  # (a result that cannot be pickled: said, not lost)
        data = cloudpickle.dumps((False, RuntimeError(f"the job's result could not be sent back: {err}")))
    result.send_bytes(data)
    result.close()
