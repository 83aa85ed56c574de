"""Ctrl-C in a terminal is sent to the whole foreground process group, not to one process
(issue 47). Dagster mirrors a step's compute log to the terminal with a ``tail -F`` and a
Python watcher (``watch_orphans.py``, which kills the tail if the run dies) started in the
run's own process group, so the watcher printed a ``KeyboardInterrupt`` traceback of its own
before the run's one ``error: interrupted`` line. ``install`` starts both in a session of
their own: the terminal's signals reach only the run, which ends them itself (as Dagster
does when a step finishes); a run killed outright still has its tail ended by the watcher."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from dagster._core.execution import compute_logs


def _fileno(stream: Any) -> int | None:
    try:
        return stream.fileno()
    except (AttributeError, OSError, ValueError):
        return None


def _end(process: subprocess.Popen | None) -> None:
    if process is None:
        return
    try:
        process.terminate()
        process.communicate(timeout=30)
    except OSError:
        pass


@contextmanager
def posix_tail(path: str, stream: Any) -> Iterator[tuple[int, int]]:
    """Dagster 1.13's ``execute_posix_tail``, its two children in a session of their own."""
    tail = watcher = None
    try:
        tail = subprocess.Popen(["tail", "-F", "-c", "+0", path],
                                stdout=stream if _fileno(stream) is not None else None,
                                start_new_session=True)
        watcher = subprocess.Popen([sys.executable, os.path.abspath(
            compute_logs.watch_orphans.__file__), str(os.getpid()), str(tail.pid)],
            start_new_session=True)
        yield tail.pid, watcher.pid
    finally:
        time.sleep(float(os.getenv("DAGSTER_COMPUTE_LOG_TAIL_WAIT_AFTER_FINISH", "0")))
        _end(tail)
        _end(watcher)


def install() -> None:
    """Mirror compute logs with ``posix_tail`` from now on (idempotent)."""
    compute_logs.execute_posix_tail = posix_tail
