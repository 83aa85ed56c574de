"""The console script's garbage collector. Everything a command makes before its real work
(Dagster's and our modules, the Dagster instance and definitions, the parsed inputs) lives until
the command ends, yet the collector's full passes walk it again and again while it is made:
about 0.4 s of a warm run on 2 cores. So ``split-assets`` pauses the collector as it starts
and, before the work that makes garbage (a Dagster run, any other command's body), freezes
what exists (moved out of every later pass) and resumes it. In-process callers (tests, a
Python session) never pause it: ``resume`` is then a no-op."""

from __future__ import annotations

import gc


def pause() -> None:
    gc.disable()


def resume() -> None:
    """Freeze what exists and collect as usual from here (when paused)."""
    if not gc.isenabled():
        gc.freeze()
        gc.enable()


def freeze() -> None:
    """Out of every later pass, the interpreter's last one included (the console script's
    exit: objects are still released by reference counting as modules are torn down)."""
    gc.freeze()
