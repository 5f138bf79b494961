"""The end of the ``rlexp`` process, without CPython's teardown: freeing every object of torch, SB3 and
Hydra one by one costs about half a second at the end of every command, more than a run's own checks."""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading
from typing import NoReturn


def exit_without_teardown(code: object) -> NoReturn:
    """Exits with ``code`` (a SystemExit's) after all that Python's exit does that can be seen outside:
    the exit message, the threads' exit hooks and joins (thread pools never shut down included), the
    atexit handlers (logging, trackers, multiprocessing, temporary dirs) and the flushing of Python's and
    C's output buffers. (A run's files are flushed as it writes them.) Under a tracer or a profiler
    (coverage, pdb, cProfile) Python's own exit runs, so that they can save what they found."""
    if code is None:
        code = 0
    elif not isinstance(code, int):  # sys.exit("message"): printed, status 1
        print(code, file=sys.stderr)
        code = 1
    if sys.gettrace() is not None or sys.getprofile() is not None:
        sys.exit(code)
    shutdown = getattr(threading, "_shutdown", None)  # what CPython's exit calls first
    if shutdown is not None:
        shutdown()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        if stream is None:  # (started with the descriptor closed)
            continue
        try:
            stream.flush()
        except BrokenPipeError:  # the reader left (rlexp ... | head)
            pass
        except OSError:  # e.g. a full disk under a redirected output: status 120, as Python's exit gives
            code = code or 120
    _flush_c_streams()
    os._exit(code)


def _flush_c_streams() -> None:
    """What C extensions printed through stdio (MuJoCo's warnings, say) and the C library still holds."""
    import ctypes

    with contextlib.suppress(OSError, AttributeError, TypeError):  # no C library to ask (Windows)
        ctypes.CDLL(None).fflush(None)


def stopped_by_ctrl_c(what: str) -> NoReturn:
    """Ctrl-C before a run's own stop handling is in place (while the command loads, composes or checks):
    one line and the status of SIGINT, not a traceback through whatever was loading. No exit hooks run: a
    library whose import was cut short has hooks of its own that print (torch's, through unset loggers)."""
    print(f"rlexp: stopped by Ctrl-C {what}", file=sys.stderr)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, AttributeError):
            stream.flush()
    os._exit(130)
