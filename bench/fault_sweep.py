"""The fault sweep (issue 47): `split-assets run` of the 900-video demo workspace, its judge
``openai`` against the local test server (50 ms a call, concurrency 8), meets the faults of the
field. Every trial starts from a fresh copy (fresh signal store, fresh Dagster instance).

- **SIGKILL** of the run's whole process group at ``--kills`` seeded moments spread over a plain
  run's length, on the SQLite store and on PostgreSQL. After each: the store passes its check
  (``PRAGMA integrity_check``; no lease on a finished question, every lease held by a dead
  process of this host, so taken over at once), no ``.tmp`` file or half-written split is where
  ``verify`` or a later run reads, and a plain re-run ends with pools.json byte-identical to an
  uninterrupted run's, paying again at most the calls in flight at the kill (the requests the
  server had received whose diagnosis the store did not hold: at most ``diag.concurrency``
  unanswered, and as many answers being parsed and committed).
- **The database goes away** mid-diagnosis: PostgreSQL stopped, restarted, or the connection
  cut for 5 s (a proxy resets every connection; the server stays up); with the signal store
  alone on PostgreSQL, then with the Dagster instance there too. The run ends within 30 s with
  one ``error:`` line naming the database (no credentials), a non-zero exit and no traceback;
  it does not reconnect (docs/how-to/team.md says why); its leases are a dead process's, and
  the re-run, once the server is back, completes with the same pools.

Prints one line per trial, a summary per backend and fault, and last one JSON object; exits 1
on any failure. Usage: ``.venv/bin/python -m bench.fault_sweep [--kills 20] [--parallel 2]
[--seed 47] [--backend sqlite|postgresql|both] [--no-db-faults]`` (needs `apt-get install
postgresql`; about 12 minutes on 2 cores)."""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

_IDS = itertools.count(1)


def _kill_trial(template: Path, folder: Path, store: str | None, at_s: float,
                plain: tuple[int, bytes]) -> dict[str, Any]:
    from testkit.faults import Trial, judged, killpg_at, split_leftovers, store_problems

    trial = Trial(template, folder, store, home_template=template.parent / "home")
    try:
        killed, received, unanswered = killpg_at(trial, at_s)
        location = store or trial.config.parent / "signals.db"
        in_flight = received - judged(location) if received else 0
        problems = store_problems(location) + split_leftovers(trial.config.parent)
        before_rerun = len(trial.llm.requests)
        again = trial.run()
        rerun_calls = len(trial.llm.requests) - before_rerun
    finally:
        trial.close()
    paid_twice = received + rerun_calls - plain[0] if received else 0
    problems += split_leftovers(trial.config.parent)
    if again.code != 0:
        problems.append(f"re-run exit {again.code}: {again.stderr.strip()[-300:]}")
    if killed.traceback or again.traceback:
        problems.append("a traceback")
    # a pass has twice as many workers as call slots (diagnosis/runner.py): at most
    # ``concurrency`` calls unanswered and as many answers being parsed and committed
    if paid_twice > in_flight or in_flight > 2 * trial.concurrency:
        problems.append(f"{paid_twice} calls paid twice, {in_flight} in flight, concurrency "
                        f"{trial.concurrency}")
    return {"at_s": at_s, "killed": killed.code == -9, "exit": killed.code,
            "calls_in_flight": in_flight, "unanswered": unanswered, "paid_twice": paid_twice,
            "identical": again.pools() == plain[1], "hung": killed.hung or again.hung,
            "traceback": killed.traceback or again.traceback, "problems": problems}


def _fault_trial(template: Path, folder: Path, pg: Any, fault: str, instance_too: bool,
                 plain: tuple[int, bytes], at_calls: int) -> dict[str, Any]:
    """One database fault once ``at_calls`` calls were made (mid-diagnosis)."""
    from split_assets.orchestration.instance import team_dagster_yaml
    from testkit.faults import Trial, store_problems, wait
    from testkit.tcp_proxy import TcpProxy

    n = next(_IDS)
    with TcpProxy(pg.folder / ".s.PGSQL.5432") as proxy:
        port = proxy.port
        host = f"postgres@127.0.0.1:{port}"
        pg.create_database(f"signals{n}")
        store = f"postgresql://{host}/signals{n}"
        env, yaml = {}, None
        if instance_too:
            pg.create_database(f"dagster{n}")
            env = {"DAGSTER_POSTGRES_URL": f"postgresql+psycopg2://{host}/dagster{n}"}
            yaml = team_dagster_yaml()
        trial = Trial(template, folder, store, yaml, env)
        try:
            proc = trial.start()
            started = time.monotonic()
            while proc.poll() is None and len(trial.llm.requests) < at_calls:
                time.sleep(0.005)
            at = time.monotonic()
            {"stop": pg.stop, "restart": lambda: (pg.stop(), pg.start()),
             "drop": lambda: proxy.drop(5.0)}[fault]()
            ended = wait(proc, started, at)
            if fault == "stop":
                pg.start()
            time.sleep(max(0.0, at + 5.0 - time.monotonic()))  # the connection is back
            leases = store_problems(f"postgresql://postgres@/signals{n}?host={pg.folder}")
            again = trial.run()
        finally:
            trial.close()
    last = ended.stderr.strip().splitlines()[-1] if ended.stderr.strip() else ""
    errors = [line for line in ended.stderr.splitlines() if line.startswith("error:")]
    named = any(f"127.0.0.1:{port}/{db}{n}" in last for db in ("signals", "dagster"))
    problems = list(leases)
    if ended.code == 0:
        problems.append("the run did not notice the fault (exit 0)")
    elif not (len(errors) == 1 and last.startswith("error:") and named):
        problems.append(f"not one line naming the database: {last[:200]!r}")
    if (ended.after_fault_s or 0) > 30:
        problems.append(f"ended {ended.after_fault_s:.1f} s after the fault")
    if again.code != 0 or again.pools() != plain[1]:
        problems.append(f"re-run exit {again.code}, pools identical {again.pools() == plain[1]}")
    return {"fault": fault, "instance_on_pg": instance_too, "exit": ended.code,
            "ended_after_s": round(ended.after_fault_s or 0, 1), "line": last,
            "identical": again.pools() == plain[1], "hung": ended.hung or again.hung,
            "traceback": ended.traceback or again.traceback,
            "rerun_s": round(again.wall_s, 1), "problems": problems}


def _summary(name: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    out = {"trials": len(rows), "identical": sum(r["identical"] for r in rows),
           "hung": sum(r["hung"] for r in rows), "tracebacks": sum(r["traceback"] for r in rows),
           "failed": sum(bool(r["problems"]) for r in rows)}
    if rows and "paid_twice" in rows[0]:
        out.update(kills=sum(r["killed"] for r in rows),
                   paid_twice=sum(r["paid_twice"] for r in rows),
                   in_flight=sum(r["calls_in_flight"] for r in rows),
                   paid_twice_max=max(r["paid_twice"] for r in rows))
    else:
        out["slowest_end_s"] = max((r["ended_after_s"] for r in rows), default=0)
    print(f"{name}: " + ", ".join(f"{k} {v}" for k, v in out.items()), flush=True)
    return out


def _sweep(run: Callable[[int], dict[str, Any]], n: int, parallel: int,
           show: Callable[[dict[str, Any]], str]) -> list[dict[str, Any]]:
    def one(i: int) -> dict[str, Any]:
        row = run(i)
        print(show(row) + ("" if not row["problems"] else "  FAILED: " + "; ".join(
            row["problems"])), flush=True)
        return row

    with ThreadPoolExecutor(parallel) as pool:
        return list(pool.map(one, range(n)))


def main() -> int:
    from split_assets.demo import build_workspace
    from testkit.faults import Trial
    from testkit.postgres import postgres_server
    from testkit.runs import new_instance
    from testkit.sigint import spread

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--parallel", type=int, default=2)
    parser.add_argument("--seed", type=int, default=47)
    parser.add_argument("--backend", choices=("sqlite", "postgresql", "both"), default="both")
    parser.add_argument("--no-db-faults", action="store_true")
    args = parser.parse_args()
    started = time.monotonic()
    report: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp, postgres_server() as pg:
        folder = Path(tmp)
        build_workspace(folder / "template")
        new_instance(folder / "home")  # its storage made once, copied by each trial
        first = Trial(folder / "template", folder / "plain", home_template=folder / "home")
        plain_run = first.run()
        first.close()
        assert plain_run.code == 0, plain_run.stderr[-2000:]
        plain = (len(first.llm.requests), plain_run.pools() or b"")
        print(f"plain run: {plain_run.wall_s:.1f} s, {plain[0]} calls", flush=True)
        moments = spread(plain_run.wall_s, args.kills, args.seed)
        backends = ["sqlite", "postgresql"] if args.backend == "both" else [args.backend]
        for backend in backends:
            def kill(i: int, backend: str = backend) -> dict[str, Any]:
                n = next(_IDS)
                store = pg.create_database(f"kill{n}") if backend == "postgresql" else None
                return _kill_trial(folder / "template", folder / f"k{n}", store, moments[i],
                                   plain)

            rows = _sweep(kill, args.kills, args.parallel, lambda r, b=backend: (
                f"SIGKILL {b:10s} at {r['at_s']:5.2f} s  exit {r['exit']:4d}  in flight "
                f"{r['calls_in_flight']:2d} ({r['unanswered']} unanswered)  paid twice "
                f"{r['paid_twice']:2d}  re-run pools "
                f"{'identical' if r['identical'] else 'DIFFER'}"))
            report[f"sigkill_{backend}"] = _summary(f"SIGKILL on {backend}", rows)
        if not args.no_db_faults and "postgresql" in backends:
            cases = [(f, inst) for inst in (False, True) for f in ("stop", "restart", "drop")]

            def fault(i: int) -> dict[str, Any]:
                n = next(_IDS)
                return _fault_trial(folder / "template", folder / f"f{n}", pg, *cases[i],
                                    plain, plain[0] // 3)

            rows = _sweep(fault, len(cases), 1, lambda r: (
                f"{r['fault']:7s} instance on PostgreSQL {str(r['instance_on_pg']):5s}  exit "
                f"{r['exit']}  ended {r['ended_after_s']:4.1f} s after  re-run "
                f"{r['rerun_s']:4.1f} s pools {'identical' if r['identical'] else 'DIFFER'}\n"
                f"    {r['line'][:240]}"))
            for f in ("stop", "restart", "drop"):
                report[f"db_{f}"] = _summary(f"PostgreSQL {f}", [r for r in rows
                                                                 if r["fault"] == f])
    failed = sum(v["failed"] + v["hung"] + v["tracebacks"] + v["trials"] - v["identical"]
                 for v in report.values())
    report.update(minutes=round((time.monotonic() - started) / 60, 1), failed=failed)
    print(json.dumps(report))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
