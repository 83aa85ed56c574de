"""A signal sweep: ``split-assets run`` on fresh copies of a workspace, each sent one Ctrl-C
(SIGINT) or one SIGTERM at its own moment, and what a user must see: exit 130 with the
``error: interrupted (Ctrl-C)`` line last on stderr (SIGTERM: exit 143, ``error: terminated
(SIGTERM)``), or -- when the run had finished -- exit 0 with every result line; never a
traceback, an "Exception ignored", exit 1, or a process killed by the signal. Shared by
tests/cli/test_sigint_sweep.py (12 timings) and bench/sigint_sweep.py (30, on the demo)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

CLI = Path(sys.executable).parent / "split-assets"
RESULTS = ("fingerprint", "split_id", "pools", "pools_sha256", "manifest")


ALIVE_AFTER_S = 10.0  # a signalled run must have ended by then
# what each signal must end a run with: its exit status and the start of the last line
ENDINGS = {signal.SIGINT: (130, "error: interrupted (Ctrl-C): "),
           signal.SIGTERM: (143, "error: terminated (SIGTERM): ")}


@dataclass(frozen=True)
class Outcome:
    at_s: float
    code: int
    stdout: str
    stderr: str
    wall_s: float
    sig: int = signal.SIGINT
    after_signal_s: float | None = None  # from the signal to the exit (None: not sent)

    def problem(self) -> str | None:
        """What is wrong with this outcome, or None."""
        if self.after_signal_s is not None and self.after_signal_s > ALIVE_AFTER_S:
            return f"alive {self.after_signal_s:.1f} s after the signal"
        for marker in ("Traceback", "Exception ignored", "Exception in callback"):
            if marker in self.stderr:
                return f"{marker} in stderr"
        code, line = ENDINGS[self.sig]
        if self.code == code:
            last = self.stderr.strip().splitlines()[-1] if self.stderr.strip() else ""
            if not last.startswith(line):
                return f"exit {code}, but stderr's last line is {last!r}"
            if sum(line.startswith("error:") for line in self.stderr.splitlines()) != 1:
                return f"exit {code} with more than one error line"
            return None
        if self.code == 0:
            keys = [line.split("=", 1)[0] for line in self.stdout.splitlines() if "=" in line]
            return None if keys[:len(RESULTS)] == list(RESULTS) else f"exit 0 without {RESULTS}"
        return f"exit {self.code}" + (" (killed by the signal)" if self.code < 0 else "")


def interrupt_at(config: Path, home: Path, at_s: float, timeout_s: float = 120,
                 sig: int = signal.SIGINT, group: bool = False) -> Outcome:
    """Start a run, send ``sig`` ``at_s`` seconds in (unless it ended), wait for it. ``group``:
    as a terminal sends it, to the run's whole process group (the run starts a session of its
    own, and the signal reaches every process it started there)."""
    # a run that never ends after the signal is aborted with every thread's stack on stderr
    env = dict(os.environ, DAGSTER_HOME=str(home), PYTHONFAULTHANDLER="1")
    proc = subprocess.Popen([str(CLI), "run", "--config", str(config)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=group)
    started = time.monotonic()
    deadline = started + (at_s or timeout_s)
    while proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    sent = None
    if proc.poll() is None:
        os.killpg(proc.pid, sig) if group else proc.send_signal(sig)
        sent = time.monotonic()
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGABRT) if group else proc.send_signal(signal.SIGABRT)
        out, err = proc.communicate()
        err = f"HUNG {timeout_s} s after the start; the stacks it was aborted with:\n{err}"
    ended = time.monotonic()
    return Outcome(at_s, proc.returncode, out, err, ended - started, sig,
                   None if sent is None else ended - sent)


@contextmanager
def burning(n: int) -> Iterator[None]:
    """``n`` processes burning a CPU each (niced a little) while the block runs: a busy
    machine, where a signal lands in the middle of slow start-up and slow steps."""
    burners = [subprocess.Popen([sys.executable, "-c", "import os; os.nice(5)\nwhile True: pass"])
               for _ in range(n)]
    try:
        yield
    finally:
        for proc in burners:
            proc.kill()
            proc.wait()


def spread(duration_s: float, n: int, seed: int) -> list[float]:
    """``n`` seeded moments spread over a run of ``duration_s`` (one per n-th of it, jittered
    within it), from start-up (imports, config) through diagnosis, freezing and the checks."""
    import random

    rng = random.Random(seed)
    start, end = 0.2, 1.05 * duration_s
    step = (end - start) / n
    return [round(start + step * (i + rng.random()), 2) for i in range(n)]


def sweep(template: Path, home_template: Path, folder: Path, timings: list[float],
          parallel: int = 2, sig: int = signal.SIGINT, group: bool = False) -> list[Outcome]:
    """One fresh copy of the workspace and of the Dagster instance per timing (``at_s`` 0:
    not interrupted)."""
    def one(i: int, at_s: float) -> Outcome:
        ws, home = folder / f"ws{i}", folder / f"home{i}"
        shutil.copytree(template, ws)
        shutil.copytree(home_template, home)
        return interrupt_at(ws / "video_split.yaml", home, at_s, sig=sig, group=group)

    with ThreadPoolExecutor(parallel) as pool:
        return list(pool.map(one, range(len(timings)), timings))
