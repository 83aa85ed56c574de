"""Ctrl-C as a terminal sends it (issue 47): SIGINT to the whole process group while a step
runs. Dagster's compute-log watcher (watch_orphans.py) used to print a KeyboardInterrupt
traceback of its own before the run's line; now only the run hears the signal, ends with exit
130 and its one line, and leaves no tail or watcher behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest


@pytest.mark.timeout(180)
def test_ctrl_c_to_the_process_group_during_a_step(small_workspace: Path) -> None:
    run = subprocess.Popen([sys.executable, "-m", "split_assets.cli", "run", "--config",
                            str(small_workspace)], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, start_new_session=True)
    tails: list[str] = []
    deadline = time.monotonic() + 120
    while run.poll() is None and time.monotonic() < deadline:
        children = subprocess.run(["ps", "-ww", "-o", "pid=,args=", "--ppid", str(run.pid)],
                                  capture_output=True, text=True).stdout
        tails = [line.split()[0] for line in children.splitlines() if "tail -F" in line]
        if tails and "watch_orphans" in children:  # a step's compute log is mirrored
            time.sleep(0.3)  # the watcher's Python is up and in its loop
            os.killpg(run.pid, signal.SIGINT)
            break
        time.sleep(0.02)
    _, err = run.communicate(timeout=60)
    assert tails, "the run ended before any step mirrored its compute log"
    assert run.returncode == 130, err[-2000:]
    assert "Traceback" not in err and "Exception ignored" not in err, err[-3000:]
    assert err.strip().splitlines()[-1].startswith("error: interrupted"), err[-500:]
    time.sleep(0.2)
    for pid in tails:  # ended by the run, not orphaned
        assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(
            f"/proc/{pid}/status").read_text().lower()
