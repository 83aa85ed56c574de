"""Scale-out: four `split-assets run` processes (as four machines would run them) diagnose one
generated benchmark of 20,000 wrong answers into one PostgreSQL signal store.

- The workspace: the sample generator at 18,750 videos (56,250 questions, ~20,000 wrong
  non-INFRA answers), its traces as generated.
- The judge: openai, concurrency 16 per worker, against the local test server
  (testkit/llm_server.py) answering each call after 500 ms: the bound is
  4 x 16 / 0.5 s = 128 calls/s.
- The store: a real PostgreSQL server started from Debian's binaries for this bench.
- Midway, one worker is SIGKILLed and started again (against a second server of the same
  latency, so that its calls after the restart are counted apart: ``resume_calls``).

Then the split those workers froze is compared with the one a single worker freezes on a SQLite
copy of the same diagnoses (pools.json byte for byte; the manifests may differ only in
``paths.signals_db``), and the split's input loading (the signal rows of the partition) is
timed from PostgreSQL and from SQLite side by side.

Prints progress to stderr and, last line, one JSON object. Run: .venv/bin/python bench/scale.py
(needs `apt-get install postgresql`; takes about ten minutes on 2 cores).
"""

from __future__ import annotations

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

N_VIDEOS = int(os.environ.get("BENCH_SCALE_VIDEOS", "18750"))  # fewer: a quick trial
WORKERS, CONCURRENCY, LATENCY_S = 4, 16, 0.5
PIN = "2026-01-01T00:00:00Z"
KILL_AT = 0.4  # share of the questions diagnosed when one worker is killed
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


class Server:
    """The local OpenAI-compatible test server in its own process."""

    def __init__(self) -> None:
        script = ROOT / "testkit" / "llm_server.py"
        self.proc = subprocess.Popen([sys.executable, str(script), "--port", "0", "--latency",
                                      str(LATENCY_S)], stdout=subprocess.PIPE, text=True)
        ready = self.proc.stdout.readline().split()
        assert ready and ready[0] == "READY", ready
        self.url = ready[1]

    def stop(self) -> int:
        """Stop it; the requests it answered."""
        self.proc.send_signal(signal.SIGINT)
        out, _ = self.proc.communicate(timeout=60)
        return int(next(line.split()[1] for line in out.splitlines()
                        if line.startswith("REQUESTS")))


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


def diagnosed(url: str) -> int:
    import psycopg

    with psycopg.connect(url) as conn:
        return conn.execute("SELECT COUNT(*) FROM signals WHERE infra = 0 AND degraded = 0"
                            ).fetchone()[0]


def run_workers(config: Path, url: str, questions: int, tmp: Path) -> dict[str, Any]:
    """Four workers, one killed at KILL_AT and started again; until every one has exited."""
    main, resume = Server(), Server()
    homes = [dagster_home(tmp / f"home{i}") for i in range(WORKERS)]  # one per machine
    logs = [tmp / f"worker{i}.log" for i in range(WORKERS)]
    procs = [start_worker(config, homes[i], main.url, logs[i]) for i in range(WORKERS)]
    first_row = killed_at = done_at = None
    restarted = None
    try:
        while any(p.poll() is None for p in procs) or (restarted and restarted.poll() is None):
            count = diagnosed(url)
            now = time.monotonic()
            if count and first_row is None:
                first_row = now
            if count >= questions and done_at is None:
                done_at = now
                log(f"all {questions} questions diagnosed")
            if restarted is None and count >= KILL_AT * questions:
                os.killpg(procs[0].pid, signal.SIGKILL)
                procs[0].wait()
                killed_at = count
                log(f"worker 0 SIGKILLed at {count}/{questions}; starting it again")
                restarted = start_worker(config, homes[0], resume.url, tmp / "resumed.log")
            time.sleep(0.25)
        assert done_at is not None, "the workers exited before every question was diagnosed"
        for p in [*procs[1:], restarted]:
            assert p.returncode == 0, (tmp / "worker1.log").read_text()[-3000:]
    finally:
        calls_main, calls_resume = main.stop(), resume.stop()
    outs = [p.stdout.read() for p in [*procs[1:], restarted]]
    pools = {line.split("=", 1)[1] for out in outs for line in out.splitlines()
             if line.startswith("pools_sha256=")}
    assert len(pools) == 1, pools  # every worker froze the same split
    rss = [peak_rss_mb(f) for f in [*logs[1:], tmp / "resumed.log"]]
    # the first row lands one call after the first call was sent
    wall = done_at - first_row + LATENCY_S
    return {"calls_main": calls_main, "resume_calls": calls_resume, "wall_s": wall,
            "killed_at": killed_at, "peak_rss_mb_per_worker": round(max(rss), 1)}


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
        run = run_workers(config, url, questions, tmp)
        repairs = repair_calls(url)
        ws = Session.open(config)
        run_id, fingerprint = ws.partition.run_id, ws.partition.key
        identical = single_sqlite_worker(config, url, tmp)
        load = loading(url, config.parent / "signals.db", run_id, fingerprint)
    calls = run["calls_main"] + run["resume_calls"]
    bound = WORKERS * CONCURRENCY / LATENCY_S
    rate = calls / run["wall_s"]
    print(f"{questions} questions: {calls} calls ({repairs} repairs, "
          f"{calls - questions - repairs} repeated; {run['resume_calls']} by the restarted "
          f"worker, killed at {run['killed_at']}), {rate:.1f} calls/s vs bound {bound:.0f} "
          f"(ratio {rate / bound:.3f}); peak RSS {run['peak_rss_mb_per_worker']} MB per "
          f"worker; pools.json identical to a single SQLite worker's: {identical}")
    print(f"input loading of {load['rows']} signal rows: PostgreSQL {load['postgresql_s']} s, "
          f"SQLite {load['sqlite_s']} s (ratio {load['ratio']})")
    print(json.dumps({
        "questions": questions, "calls": calls, "repair_calls": repairs,
        "repeated_calls": calls - questions - repairs,
        "calls_per_s": round(rate, 1), "bound_calls_per_s": round(bound, 1),
        "ratio": round(rate / bound, 3),
        "peak_rss_mb_per_worker": run["peak_rss_mb_per_worker"],
        "resume_calls": run["resume_calls"], "pools_identical": identical,
        "loading_pg_vs_sqlite": load["ratio"]}))


if __name__ == "__main__":
    main()
