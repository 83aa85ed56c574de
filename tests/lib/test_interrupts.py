"""A Ctrl-C that a Python-level handler dropped (as Dagster's does when its exception is raised
inside a garbage-collection callback: "Exception ignored in ...") is still seen at the next
safe point, and only while a run is watched."""

from __future__ import annotations

import os
import signal
import time

import pytest

from split_assets.lib import interrupts


def test_a_dropped_sigint_is_seen_at_the_next_check() -> None:
    with interrupts.watch():
        interrupts.check()  # nothing yet
        dropped = signal.signal(signal.SIGINT, lambda *_: None)  # the handler loses it
        try:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)
        finally:
            signal.signal(signal.SIGINT, dropped)
        for _ in range(2):  # seen once, then at every later safe point of the run
            with pytest.raises(KeyboardInterrupt):
                interrupts.check()
    interrupts.check()  # the next run starts clean


def test_a_settled_command_stays_deaf_to_a_late_sigterm() -> None:
    """Once the outcome is printed (settle), the end of the watch must not hand SIGTERM back
    to its default action: a SIGTERM in the last instant would kill the process (exit -15)."""
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    try:
        with interrupts.watch():
            interrupts.settle()
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_IGN
        os.kill(os.getpid(), signal.SIGTERM)  # ignored: the test process lives on
        time.sleep(0.05)
    finally:
        signal.signal(signal.SIGINT, before[0])
        signal.signal(signal.SIGTERM, before[1])
    with interrupts.watch():  # an unsettled watch restores what was there
        pass
    assert signal.getsignal(signal.SIGTERM) == before[1]
