"""Ctrl-C that is never lost and never shows a traceback.

Python (and Dagster's handler inside a step) turns SIGINT into an exception raised wherever the
interpreter happens to be. When that is a garbage-collection or weakref callback (e.g.
SQLAlchemy's ``_collection_gced``) the exception is printed as "Exception ignored in ..." and
dropped; when it is SQLAlchemy closing a connection, the pool logs it with a traceback and goes
on. Either way a run could go on to freeze a split the user asked to stop.

``watch`` (entered once per command, by ``cli.main``) closes both holes for the whole command:
every SIGINT is recorded at the C level (Python's signal wake-up file descriptor, written
whichever Python handler is installed); an interrupt that reaches ``sys.unraisablehook`` or a
log record is recorded too, and silenced. ``check`` raises KeyboardInterrupt at safe points --
the start and end of every asset and check, right before freezing -- when one arrived; and
``seen`` lets the CLI report any failure an interrupt caused as the interrupt itself. ``settle``
ignores SIGINT once a command's outcome is printed, so interpreter shutdown cannot be killed by
a late one.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_pending: dict[str, int] = {}  # "fd": the read end of the wake-up pipe while watching
_seen = {"interrupt": False, "terminated": False}
_INTERRUPTS = ("KeyboardInterrupt", "DagsterExecutionInterruptedError")


def is_interrupt(exc: BaseException | None) -> bool:
    """A KeyboardInterrupt, or Dagster's form of one inside a step."""
    return exc is not None and any(c.__name__ in _INTERRUPTS for c in type(exc).__mro__)


class _SilenceInterrupts(logging.Filter):
    """Drop (and record) a log record whose exception is an interrupt (SQLAlchemy's pool logs
    'Exception closing connection' with the traceback of the KeyboardInterrupt it re-raises)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and is_interrupt(record.exc_info[1]):
            _seen["interrupt"] = True
            return False
        return True


_FILTER = _SilenceInterrupts()


def _unraisable(hook: Any) -> Any:
    def handle(unraisable: Any) -> None:
        if is_interrupt(unraisable.exc_value):
            _seen["interrupt"] = True  # recorded, not printed: check() raises it at a safe point
            return
        hook(unraisable)
    return handle


@contextmanager
def watch() -> Iterator[None]:
    """Record SIGINTs while the block runs (main thread only; elsewhere, or nested, a no-op)."""
    if threading.current_thread() is not threading.main_thread() or "fd" in _pending:
        yield
        return
    read, write = os.pipe()
    os.set_blocking(read, False)
    os.set_blocking(write, False)
    previous = signal.set_wakeup_fd(write, warn_on_full_buffer=False)
    previous_term = signal.signal(signal.SIGTERM, _terminate)
    previous_hook = sys.unraisablehook
    sys.unraisablehook = _unraisable(previous_hook)
    handlers = [logging.lastResort, *logging.getLogger().handlers]
    for handler in handlers:
        if handler is not None:
            handler.addFilter(_FILTER)
    _pending["fd"] = read
    _seen["interrupt"] = _seen["terminated"] = False
    try:
        yield
    finally:
        signal.set_wakeup_fd(previous)
        if signal.getsignal(signal.SIGTERM) is _terminate:  # settled: stays ignored, so a
            signal.signal(signal.SIGTERM, previous_term)    # late SIGTERM cannot kill it
        sys.unraisablehook = previous_hook
        for handler in handlers:
            if handler is not None:
                handler.removeFilter(_FILTER)
        _pending.pop("fd", None)
        _seen["interrupt"] = _seen["terminated"] = False  # the next command starts clean
        os.close(read)
        os.close(write)


def seen() -> bool:
    """Whether a SIGINT arrived while watching (once seen, always, until the watch ends;
    outside a watch, never)."""
    fd = _pending.get("fd")
    if fd is None:
        return False
    try:
        data = os.read(fd, 512)
    except (BlockingIOError, OSError):
        data = b""
    if signal.SIGINT in data or signal.SIGTERM in data:
        _seen["interrupt"] = True
    if signal.SIGTERM in data:
        _seen["terminated"] = True
    return _seen["interrupt"]


def terminated() -> bool:
    """Whether the interrupt was a SIGTERM (exit 143 rather than 130)."""
    seen()
    return _seen["terminated"]


def _terminate(signo: int, frame: Any) -> None:
    """SIGTERM is handled as Ctrl-C: whatever SIGINT handler is in place runs (Python's
    raises KeyboardInterrupt; Dagster's, inside a step, its own interrupt or a deferred one),
    so every path that ends a run on Ctrl-C ends it on SIGTERM."""
    _seen["interrupt"] = _seen["terminated"] = True
    handler = signal.getsignal(signal.SIGINT)
    if callable(handler):
        handler(signal.SIGINT, frame)
    else:
        raise KeyboardInterrupt


def check() -> None:
    """Raise KeyboardInterrupt if a SIGINT arrived while watching."""
    if seen():
        raise KeyboardInterrupt


def settle() -> None:
    """The command's outcome is printed: a later SIGINT is ignored (main thread only), so
    interpreter shutdown cannot end in a process killed by the signal."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
