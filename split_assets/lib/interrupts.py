"""Ctrl-C that is never lost.

Dagster turns SIGINT into an exception raised wherever Python happens to be. When that is a
garbage-collection or weakref callback (e.g. SQLAlchemy's, right after a large collection), the
exception is printed as "Exception ignored in ..." and dropped, and the run would go on to freeze
a split the user asked to stop. ``watch`` records every SIGINT at the C level (Python's signal
wake-up file descriptor, written whichever Python handler is installed); ``check`` raises
KeyboardInterrupt at a safe point -- the start and end of every asset and check -- when one
arrived, so a dropped interrupt still stops the run before anything else is frozen.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_pending: dict[str, int] = {}  # "fd": the read end of the wake-up pipe while watching
_seen = {"interrupt": False}


@contextmanager
def watch() -> Iterator[None]:
    """Record SIGINTs while the block runs (main thread only; elsewhere a no-op)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    read, write = os.pipe()
    os.set_blocking(read, False)
    os.set_blocking(write, False)
    previous = signal.set_wakeup_fd(write, warn_on_full_buffer=False)
    _pending["fd"] = read
    _seen["interrupt"] = False
    try:
        yield
    finally:
        signal.set_wakeup_fd(previous)
        _pending.pop("fd", None)
        _seen["interrupt"] = False
        os.close(read)
        os.close(write)


def check() -> None:
    """Raise KeyboardInterrupt if a SIGINT arrived while watching (once seen, always)."""
    fd = _pending.get("fd")
    if fd is not None:
        try:
            data = os.read(fd, 512)
        except (BlockingIOError, OSError):
            data = b""
        if signal.SIGINT in data:
            _seen["interrupt"] = True
    if _seen["interrupt"]:
        raise KeyboardInterrupt
