"""Failpoints for the crash tests: ``SPLIT_ASSETS_KILL_AT=<point>[:<n>]`` kills the process with
SIGKILL the n-th time (default: first) it reaches ``failpoint(<point>)``;
``SPLIT_ASSETS_KILL_SIGNAL=INT`` sends SIGINT instead (a Ctrl-C at exactly that point). Unset
(always, outside the tests) a failpoint costs one comparison."""

from __future__ import annotations

import os
import signal

_ENV = "SPLIT_ASSETS_KILL_AT"
_target = os.environ.get(_ENV, "")
_point, _, _nth = _target.partition(":")
_hits = 0


def failpoint(name: str) -> None:
    """Die here when the environment names this point (tests only)."""
    global _hits
    if not _point or name != _point:
        return
    _hits += 1
    if _hits == int(_nth or 1):
        name = os.environ.get("SPLIT_ASSETS_KILL_SIGNAL", "KILL")
        os.kill(os.getpid(), getattr(signal, f"SIG{name}"))
