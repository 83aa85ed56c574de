"""Faults a run meets in the field, and what must hold after each (issue 47): the run's whole
process group SIGKILLed at a seeded moment (the out-of-memory killer, a laptop lid, a preempted
VM), or its PostgreSQL database stopped, restarted or cut off for 5 s mid-diagnosis. Shared by
bench/fault_sweep.py (≥ 20 moments per backend, every database fault) and the cheap versions in
``make test`` (tests/cli/test_faults.py).

A trial is one ``split-assets run`` of a fresh copy of a workspace whose judge is ``openai``
against a local test server of its own (testkit/llm_server.py), so that the server counts every
call: the calls paid twice are those of the faulted run and its re-run beyond an uninterrupted
run's, and the calls in flight at a kill are the requests the server had not answered yet."""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from testkit.configs import edit_config
from testkit.llm_server import FakeLLM

PIN = "2026-01-01T00:00:00Z"
HUNG_S = 180.0  # a run (or re-run) not ended by then is hung


@dataclass
class Ended:
    """How one ``split-assets run`` ended."""

    code: int
    stdout: str
    stderr: str
    wall_s: float
    after_fault_s: float | None = None  # from the fault to the exit

    @property
    def hung(self) -> bool:
        return self.code == -999

    @property
    def traceback(self) -> bool:
        return any(marker in self.stderr for marker in (
            "Traceback", "Exception in callback", "Exception ignored"))

    def pools(self) -> bytes | None:
        for line in self.stdout.splitlines():
            if line.startswith("pools="):
                return Path(line.split("=", 1)[1]).read_bytes()
        return None


@dataclass
class Trial:
    """A fresh copy of ``template`` with its signal store at ``store`` (None: the SQLite file of
    the copy) and a Dagster instance of its own, judged by a test server of its own."""

    template: Path
    folder: Path
    store: str | None = None
    instance_yaml: str | None = None  # dagster.yaml (None: the default SQLite instance)
    env: dict[str, str] = field(default_factory=dict)
    latency_s: float = 0.05
    concurrency: int = 8
    home_template: Path | None = None  # a ready instance to copy (its storage made once)

    def __post_init__(self) -> None:
        from split_assets.orchestration.instance import DAGSTER_YAML

        shutil.copytree(self.template, self.folder / "ws")
        self.config = self.folder / "ws" / "video_split.yaml"
        paths = {"signals_db": self.store} if self.store else {}
        edit_config(self.config, paths=paths, diag={
            "judge": "openai", "model": "fake-model", "concurrency": self.concurrency})
        self.home = self.folder / "home"
        if self.home_template is not None:
            shutil.copytree(self.home_template, self.home)
        else:
            self.home.mkdir()
            (self.home / "dagster.yaml").write_text(self.instance_yaml or DAGSTER_YAML,
                                                    encoding="utf-8")
        self.llm = FakeLLM(latency_s=self.latency_s).start()

    def start(self) -> subprocess.Popen[str]:
        """The run, in a session of its own (its process group is the one signalled)."""
        env = dict(os.environ, DAGSTER_HOME=str(self.home), OPENAI_BASE_URL=self.llm.base_url,
                   OPENAI_API_KEY="fault-key", PYTHONFAULTHANDLER="1", **self.env)
        return subprocess.Popen([sys.executable, "-m", "split_assets.cli", "run", "--config",
                                 str(self.config), "--generated-at", PIN], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)

    def run(self) -> Ended:
        """A plain run to its end."""
        return wait(self.start(), time.monotonic())

    def close(self) -> None:
        self.llm.stop()


def wait(proc: subprocess.Popen[str], started: float, fault_at: float | None = None) -> Ended:
    """Wait for a run; one alive HUNG_S after its start (or its fault) is aborted with every
    thread's stack on stderr and reported hung."""
    try:
        out, err = proc.communicate(timeout=HUNG_S)
        code = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGABRT)
        out, err = proc.communicate()
        code = -999
    ended = time.monotonic()
    return Ended(code, out, err, ended - started,
                 None if fault_at is None else ended - fault_at)


def killpg_at(trial: Trial, at_s: float, at_calls: int | None = None
              ) -> tuple[Ended, int, int]:
    """Start a run and SIGKILL its process group ``at_s`` seconds in, or once the server has
    received ``at_calls`` calls (unless it ended); how it ended, the calls the server had
    received and those it had not answered at the kill."""
    proc = trial.start()
    started = time.monotonic()
    while proc.poll() is None and (len(trial.llm.requests) < at_calls if at_calls is not None
                                   else time.monotonic() < started + at_s):
        time.sleep(0.005)
    received = open_at_kill = 0
    if proc.poll() is None:
        received, open_at_kill = len(trial.llm.requests), trial.llm.open_requests
        os.killpg(proc.pid, signal.SIGKILL)
    return wait(proc, started), received, open_at_kill


def split_leftovers(workspace: Path) -> list[str]:
    """What a later run or ``verify`` would trip on: a ``.tmp`` file outside the hidden folder a
    killed freeze leaves (the next freeze removes it: freeze.py), or a split folder whose
    pools.json is missing or differs from its manifest's digest."""
    import hashlib
    import json

    def shown(path: Path) -> bool:
        return not any(part.startswith(".") for part in path.relative_to(workspace).parts)

    found = [str(p) for p in workspace.rglob("*.tmp") if shown(p)]
    for folder in workspace.glob("splits/*/*"):
        if not shown(folder) or not folder.is_dir():
            continue
        manifest, pools = folder / "split_manifest.json", folder / "pools.json"
        try:
            expected = json.loads(manifest.read_text())["pools_sha256"]
            if hashlib.sha256(pools.read_bytes()).hexdigest() != expected:
                found.append(f"{folder}: pools.json differs from its manifest")
        except (OSError, ValueError, KeyError) as exc:
            found.append(f"{folder}: half-written ({exc})")
    return found


def store_problems(location: Path | str) -> list[str]:
    """The signal store after a fault: SQLite's ``PRAGMA integrity_check``, and a consistent
    lease table: no lease on a finished question, every lease held by a process of this host
    that is gone (so that the next run takes it over at once)."""
    from split_assets.lib.files import pid_alive
    from split_assets.store.leases import process_space

    problems: list[str] = []
    if not str(location).startswith("postgresql"):
        path = Path(location)
        if not path.exists():
            return problems
        with sqlite3.connect(path) as conn:
            check = conn.execute("PRAGMA integrity_check").fetchall()
        if check != [("ok",)]:
            problems.append(f"integrity_check: {check[:3]}")
    rows, finished = _leases(location)
    for question, host, pid in rows:
        if question in finished:
            problems.append(f"a lease on the finished question {question}")
        elif host != process_space() or pid_alive(pid):
            problems.append(f"question {question} leased by a live process ({host} pid {pid})")
    return problems[:5]


def judged(location: Path | str) -> int:
    """The diagnoses the judge's calls wrote to the store (its non-INFRA rows)."""
    sql = "SELECT COUNT(*) FROM signals WHERE infra = 0"
    if str(location).startswith("postgresql"):
        import psycopg

        with psycopg.connect(str(location)) as conn:
            if conn.execute("SELECT to_regclass('signals')").fetchone()[0] is None:
                return 0
            return conn.execute(sql).fetchone()[0]
    if not Path(location).exists():
        return 0
    with sqlite3.connect(location) as conn:
        if not conn.execute("SELECT name FROM sqlite_master WHERE name = 'signals'").fetchall():
            return 0
        return conn.execute(sql).fetchone()[0]


def _leases(location: Path | str) -> tuple[list[tuple[str, str, int]], set[str]]:
    # PostgreSQL keeps a free row (no owner) per question ever claimed: not a lease held
    leases = "SELECT question_id, host, pid FROM leases WHERE owner != ''"
    done = ("SELECT question_id FROM signals WHERE degraded = 0 AND question_id IN "
            "(SELECT question_id FROM leases WHERE owner != '')")
    if str(location).startswith("postgresql"):
        import psycopg

        with psycopg.connect(str(location)) as conn:
            if conn.execute("SELECT to_regclass('leases')").fetchone()[0] is None:
                return [], set()
            return conn.execute(leases).fetchall(), {r[0] for r in conn.execute(done)}
    with sqlite3.connect(location) as conn:
        if not conn.execute("SELECT name FROM sqlite_master WHERE name = 'leases'").fetchall():
            return [], set()
        return conn.execute(leases).fetchall(), {r[0] for r in conn.execute(done)}
