"""Scale-out (issues 31, 47): eight `split-assets run` processes (as eight machines would run
them) diagnose one generated benchmark of about 100,000 wrong answers into one PostgreSQL signal
store, through a SIGKILL of one worker and a restart of the database server.

- The workspace: the sample generator at 93,750 videos (281,250 questions, ~100,000 wrong
  non-INFRA answers), its traces as generated.
- The judge: openai, concurrency 16 per worker, against the local test server
  (testkit/llm_server.py, in this process) answering each call after 1 s: the bound is
  8 x 16 / 1 s = 128 calls/s, so that the clients' CPU fits 2 cores.
- The store: a real PostgreSQL server started from Debian's binaries for this bench.
- At 30 % of the questions one worker's process group is SIGKILLed and started again; at 60 %
  the PostgreSQL server is restarted (stopped, started). A worker ends with one line when its
  database goes away (it does not reconnect: docs/how-to/team.md); the bench starts every
  worker that ended so again, as an operator's supervisor would.
- The rate excludes the restart's recovery: from the stop until every worker that ended on it
  diagnoses again (started again, its inputs loaded); the ratio with only the server's own
  downtime excluded (the stop to the first row written after it) is printed beside it.
  The calls paid twice (the server's calls beyond one per distinct prompt) must not exceed the
  calls in flight at the kill and at the restart (prompts the server had received whose
  diagnosis the store did not hold yet).

Then the split those workers froze is compared with the one a single worker freezes on a SQLite
copy of the same diagnoses (pools.json byte for byte; the manifests may differ only in
``paths.signals_db``), and the split's input loading (the signal rows of the partition) is
timed from PostgreSQL and from SQLite side by side.

Prints progress to stderr and, last line, one JSON object. Run: .venv/bin/python bench/scale.py
(needs `apt-get install postgresql`; about 25 minutes on 2 cores; BENCH_SCALE_VIDEOS=9375 is a
quick trial of about 10,000 answers).
"""

from __future__ import annotations

import gc
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

N_VIDEOS = int(os.environ.get("BENCH_SCALE_VIDEOS", "93750"))  # fewer: a quick trial
WORKERS, CONCURRENCY, LATENCY_S = 8, 16, 1.0
PIN = "2026-01-01T00:00:00Z"
KILL_AT = 0.3  # share of the questions diagnosed when one worker is killed
RESTART_AT = 0.6  # and when the PostgreSQL server is restarted
# a worker: `split-assets run` that reports its peak RSS when it exits (VmHWM: ru_maxrss would
# also count the pages of this bench process it was started from)
WORKER = ("import atexit, sys\n"
          "def peak():\n"
          "    hwm = open('/proc/self/status').read().split('VmHWM:')[1].split()[0]\n"
          "    print('PEAK_RSS_KB', hwm, file=sys.stderr, flush=True)\n"
          "atexit.register(peak)\n"
          "from split_assets.cli import main\n"
          "sys.exit(main(sys.argv[1:]))\n")


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def dagster_home(folder: Path) -> Path:
    """A Dagster instance of its own (telemetry off), as each machine would have."""
    from split_assets.orchestration.instance import DAGSTER_YAML

    folder.mkdir()
    (folder / "dagster.yaml").write_text(DAGSTER_YAML, encoding="utf-8")
    return folder


def start_worker(config: Path, home: Path, base_url: str, log_file: Path) -> subprocess.Popen:
    env = dict(os.environ, DAGSTER_HOME=str(home), OPENAI_BASE_URL=base_url,
               OPENAI_API_KEY="bench-key")
    with log_file.open("a") as err:
        return subprocess.Popen([sys.executable, "-c", WORKER, "run", "--config", str(config),
                                 "--generated-at", PIN], env=env, stdout=subprocess.PIPE,
                                stderr=err, text=True, start_new_session=True)


def peak_rss_mb(log_file: Path) -> float:
    lines = [line for line in log_file.read_text().splitlines() if line.startswith("PEAK_RSS_KB")]
    return int(lines[-1].split()[1]) / 1024 if lines else 0.0


def make_workspace(tmp: Path, url: str) -> tuple[Path, int]:
    from split_assets.app.session import Session
    from split_assets.demo import build_workspace
    from split_assets.diagnosis.plan import plan_for
    from testkit.configs import edit_config

    summary = build_workspace(tmp / "ws", n_videos=N_VIDEOS, seed=5)
    config = edit_config(summary.config_path, paths={"signals_db": url}, diag={
        "judge": "openai", "model": "bench-model", "concurrency": CONCURRENCY})
    ws = Session.open(config)
    with ws.partition.store() as store:  # creates the tables
        questions = len(plan_for(ws.inputs.predictions, ws.partition, store).todo)
    return config, questions


def diagnosed(url: str, quiet: bool = False) -> int | None:
    """The diagnoses in the store; None (``quiet``) while the server cannot be reached."""
    import psycopg

    try:
        with psycopg.connect(url, connect_timeout=5) as conn:
            return conn.execute("SELECT COUNT(*) FROM signals WHERE infra = 0 AND degraded = 0"
                                ).fetchone()[0]
    except psycopg.OperationalError:
        if quiet:
            return None
        raise


def _prompts(llm: Any) -> int:
    """The distinct prompts the server was sent: the questions asked (and repairs); the calls
    beyond them were paid twice."""
    from testkit.llm_server import last_user_text

    return len({hash(last_user_text(body)) for body in list(llm.requests)})


class _Supervisor:
    """The workers, each started again when it ends before every question is diagnosed (the
    SIGKILLed one, those that ended on the database restart), as an operator's supervisor
    would; one log and one peak RSS per start."""

    def __init__(self, config: Path, tmp: Path, base_url: str) -> None:
        self.config, self.tmp, self.base_url = config, tmp, base_url
        self.homes = [dagster_home(tmp / f"home{i}") for i in range(WORKERS)]  # one a machine
        self.starts = [0] * WORKERS
        self.started_at: dict[tuple[int, int], float] = {}  # (worker, start) -> wall clock
        self.procs = [self._start(i) for i in range(WORKERS)]
        self.restarted = 0

    def log_of(self, i: int) -> Path:
        return self.tmp / f"worker{i}.{self.starts[i]}.log"

    def _start(self, i: int) -> subprocess.Popen:
        self.starts[i] += 1
        self.started_at[(i, self.starts[i])] = time.time()
        return start_worker(self.config, self.homes[i], self.base_url, self.log_of(i))

    def diagnosing_again(self, since: float) -> float | None:
        """When every worker started at ``since`` or later was diagnosing again (its log's
        ``diagnosis_signals STEP_START``, wall clock), None when none was started then."""
        times = []
        for (i, n), started in self.started_at.items():
            if started < since:
                continue
            text = (self.tmp / f"worker{i}.{n}.log").read_text()
            line = next(line for line in text.splitlines()
                        if 'STEP_START - Started execution of step "diagnosis_signals"' in line)
            h, m, sec = map(int, line[:8].split(":"))
            at = time.mktime(time.localtime(started)[:3] + (h, m, sec, 0, 0, -1))
            times.append(at + 86400 if at < started - 43200 else at)  # past midnight
        return max(times) if times else None

    def kill(self, i: int) -> None:
        os.killpg(self.procs[i].pid, signal.SIGKILL)
        self.procs[i].wait()

    def tend(self, done: bool) -> bool:
        """Start again the workers that ended early; whether any is still running."""
        for i, proc in enumerate(self.procs):
            if proc.poll() is None or proc.returncode == 0 or done:
                continue
            tail = self.log_of(i).read_text()[-400:].strip().splitlines()
            assert self.starts[i] < 4, f"worker {i} keeps ending: {tail[-1:]}"
            log(f"worker {i} ended with exit {proc.returncode} ({tail[-1][:160] if tail else ''})"
                "; starting it again")
            self.restarted += 1
            self.procs[i] = self._start(i)
        return any(p.poll() is None for p in self.procs)

    def logs(self) -> list[Path]:
        return [self.tmp / f"worker{i}.{n}.log" for i in range(WORKERS)
                for n in range(1, self.starts[i] + 1)]


def run_workers(config: Path, url: str, questions: int, tmp: Path, pg: Any) -> dict[str, Any]:
    """Eight workers; one SIGKILLed at KILL_AT, the server restarted at RESTART_AT; until every
    worker has exited 0."""
    from testkit.llm_server import FakeLLM

    # the test server runs in this process and keeps every request it received (100,000 prompts,
    # gigabytes): the collector's full passes over them would stall its event loop for seconds,
    # which the workers' adaptive limits would read as queueing. Nothing here makes cycles.
    gc.collect()
    gc.disable()
    llm = FakeLLM(latency_s=LATENCY_S).start()
    crew = _Supervisor(config, tmp, llm.base_url)
    shown = time.monotonic()
    first_row = done_at = killed_at = restart = back_at = restart_wall = None
    in_flight, restarted_at = 0, 0
    try:
        while crew.tend(done_at is not None):
            count = diagnosed(url) if restart is None or back_at is not None else None
            now = time.monotonic()
            if count is None:  # the server is back once a row lands
                count = diagnosed(url, quiet=True)
                if count is not None and count > restarted_at:
                    back_at = now
                    log(f"rows written again {back_at - restart:.1f} s after the stop")
                time.sleep(0.25)
                continue
            first_row = first_row or (now if count else None)
            if now - shown >= 60:
                shown = now
                log(f"{count}/{questions} diagnosed ({len(llm.requests)} calls)")
            if count >= questions and done_at is None:
                done_at = now
                log(f"all {questions} questions diagnosed")
            if killed_at is None and count >= KILL_AT * questions:
                in_flight += _prompts(llm) - diagnosed(url)
                crew.kill(0)
                killed_at = count
                log(f"worker 0 SIGKILLed at {count}/{questions}")
            elif restart is None and count >= RESTART_AT * questions:
                in_flight += _prompts(llm) - diagnosed(url)
                restart, restarted_at, restart_wall = now, count, time.time()
                pg.stop()
                pg.start()
                log(f"PostgreSQL restarted at {count}/{questions}")
            time.sleep(0.25)
        assert done_at is not None, "the workers exited before every question was diagnosed"
    finally:
        llm.stop()
        gc.enable()
    for i, proc in enumerate(crew.procs):
        assert proc.returncode == 0, crew.log_of(i).read_text()[-3000:]
    outs = [p.stdout.read() for p in crew.procs]
    pools = {line.split("=", 1)[1] for out in outs for line in out.splitlines()
             if line.startswith("pools_sha256=")}
    assert len(pools) == 1, pools  # every worker froze the same split
    rss = [peak_rss_mb(f) for f in crew.logs()]
    downtime = (back_at - restart) if restart is not None and back_at is not None else 0.0
    # the restart's recovery: until every worker that ended on it diagnoses again (each is
    # started again and loads its inputs, minutes at this size, all eight at once on 2 cores)
    again = crew.diagnosing_again(restart_wall) if restart_wall is not None else None
    recovery = max(downtime, again - restart_wall) if again is not None else downtime
    # the first row lands one call after the first call was sent
    wall = done_at - first_row + LATENCY_S
    return {"calls": len(llm.requests), "repeated": len(llm.requests) - _prompts(llm),
            "wall_s": wall, "downtime_s": downtime, "recovery_s": recovery,
            "killed_at": killed_at, "in_flight": in_flight, "started_again": crew.restarted,
            "peak_rss_mb_per_worker": round(max(rss), 1)}


def repair_calls(url: str) -> int:
    import psycopg

    with psycopg.connect(url) as conn:  # each invalid answer is followed by one repair call
        return conn.execute("SELECT COUNT(*) FROM llm_calls WHERE status = 'invalid_output'"
                            ).fetchone()[0]


def single_sqlite_worker(config: Path, url: str, tmp: Path) -> bool:
    """Freeze the split again, from a SQLite copy of the same diagnoses, in one worker: the
    same pools.json, and manifests differing only in paths.signals_db?"""
    from split_assets.store.opening import open_store
    from split_assets.store.signals import SignalStore
    from split_assets.store.store_copy import copy_store
    from testkit.configs import edit_config

    splits = config.parent / "splits"
    frozen = {p.name: p.read_bytes() for p in splits.glob("*/*/*.json")}
    shutil.move(splits, tmp / "splits_pg")
    with open_store(url, read_only=True) as source, \
            SignalStore(config.parent / "signals.db") as target:
        copy_store(source, target)
    edit_config(config, paths={"signals_db": "signals.db"})
    home = dagster_home(tmp / "home_sqlite")
    proc = subprocess.run([sys.executable, "-m", "split_assets.cli", "run", "--config",
                           str(config), "--generated-at", PIN],
                          env=dict(os.environ, DAGSTER_HOME=str(home),
                                   OPENAI_BASE_URL="http://127.0.0.1:9/v1",  # never called
                                   OPENAI_API_KEY="bench-key"),
                          capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-3000:]
    again = {p.name: p.read_bytes() for p in splits.glob("*/*/*.json")}
    manifests = [json.loads(d["split_manifest.json"]) for d in (frozen, again)]
    for m in manifests:
        m["config"]["paths"].pop("signals_db")
    differ = sorted(k for k in manifests[0] if manifests[0][k] != manifests[1].get(k))
    if differ or again["pools.json"] != frozen["pools.json"]:
        keep = Path(tempfile.mkdtemp(prefix="scale-differ-"))
        for name, doc in (("pg", frozen), ("sqlite", again)):
            for file, data in doc.items():
                (keep / f"{name}-{file}").write_bytes(data)
        log(f"the splits differ (manifest keys {differ}); both kept in {keep}")
    return again["pools.json"] == frozen["pools.json"] and not differ


def loading(url: str, sqlite_db: Path, run_id: str, fingerprint: str) -> dict[str, float]:
    """The split's input loading from the signal store (open it read-only, read the
    partition's rows), PostgreSQL and SQLite interleaved, median of 7."""
    from split_assets.store.opening import open_store

    times: dict[str, list[float]] = {"postgresql": [], "sqlite": []}
    for _ in range(7):
        for name, location in (("postgresql", url), ("sqlite", sqlite_db)):
            started = time.perf_counter()
            with open_store(location, read_only=True) as store:
                rows = store.rows(run_id, fingerprint)
            times[name].append(time.perf_counter() - started)
    pg, lite = (statistics.median(times[k]) for k in ("postgresql", "sqlite"))
    return {"rows": len(rows), "postgresql_s": round(pg, 3), "sqlite_s": round(lite, 3),
            "ratio": round(pg / lite, 2)}


def main() -> None:
    from split_assets.app.session import Session
    from testkit.postgres import postgres_server

    with tempfile.TemporaryDirectory() as name, postgres_server() as pg:
        tmp = Path(name)
        url = pg.create_database("signals")
        log(f"generating {N_VIDEOS} videos")
        config, questions = make_workspace(tmp, url)
        log(f"{questions} wrong answers to diagnose by {WORKERS} workers, concurrency "
            f"{CONCURRENCY} each, {LATENCY_S * 1000:.0f} ms a call")
        run = run_workers(config, url, questions, tmp, pg)
        repairs = repair_calls(url)
        ws = Session.open(config)
        run_id, fingerprint = ws.partition.run_id, ws.partition.key
        identical = single_sqlite_worker(config, url, tmp)
        load = loading(url, config.parent / "signals.db", run_id, fingerprint)
    calls = run["calls"]
    bound = WORKERS * CONCURRENCY / LATENCY_S
    rate = calls / (run["wall_s"] - run["recovery_s"])
    server_only = calls / (run["wall_s"] - run["downtime_s"])
    repeated = run["repeated"]
    print(f"{questions} questions: {calls} calls ({repairs} repairs, {repeated} repeated, "
          f"{run['in_flight']} in flight at the kill and the restart; worker 0 killed at "
          f"{run['killed_at']}, {run['started_again']} start(s) again by the supervisor), "
          f"{rate:.1f} calls/s vs bound {bound:.0f} (ratio {rate / bound:.3f}, the restart's "
          f"recovery of {run['recovery_s']:.1f} s excluded; {server_only / bound:.3f} with only "
          f"the server's {run['downtime_s']:.1f} s excluded); peak RSS "
          f"{run['peak_rss_mb_per_worker']} MB per worker; pools.json identical to a single "
          f"SQLite worker's: {identical}")
    print(f"input loading of {load['rows']} signal rows: PostgreSQL {load['postgresql_s']} s, "
          f"SQLite {load['sqlite_s']} s (ratio {load['ratio']})")
    print(json.dumps({
        "questions": questions, "workers": WORKERS, "calls": calls, "repair_calls": repairs,
        "repeated_calls": repeated, "in_flight_at_faults": run["in_flight"],
        "started_again": run["started_again"], "downtime_s": round(run["downtime_s"], 1),
        "recovery_s": round(run["recovery_s"], 1),
        "ratio_server_downtime_only": round(server_only / bound, 3),
        "calls_per_s": round(rate, 1), "bound_calls_per_s": round(bound, 1),
        "ratio": round(rate / bound, 3),
        "peak_rss_mb_per_worker": run["peak_rss_mb_per_worker"],
        "pools_identical": identical, "loading_pg_vs_sqlite": load["ratio"],
        "targets_met": rate / bound >= 0.9 and run["peak_rss_mb_per_worker"] <= 500
        and repeated <= run["in_flight"] and identical}))


if __name__ == "__main__":
    main()
