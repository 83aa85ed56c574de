"""Faults of the field, cheaply (issue 47; bench/fault_sweep.py runs ≥ 20 moments per backend
and every database fault): a run's whole process group SIGKILLed at three moments on the SQLite
store, and its PostgreSQL store stopped mid-diagnosis. After each, the store is sound, nothing
half-written is where a later run reads, and a plain re-run freezes the same pools.json as an
uninterrupted run, paying again only the calls that were in flight."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from testkit.faults import Trial, judged, killpg_at, split_leftovers, store_problems, wait
from testkit.postgres import Postgres

_N = itertools.count()


def _trial(template: Path, tmp_path: Path, home: Path, store: str | None = None) -> Trial:
    # 100 ms a call, 4 at once: the diagnosis of the 60-video workspace lasts about 2 s
    return Trial(template, tmp_path / f"t{next(_N)}", store, latency_s=0.1, concurrency=4,
                 home_template=home)


@pytest.mark.timeout(300)
def test_sigkill_at_three_moments_on_sqlite(_small_template: Path, tmp_path: Path,
                                            _dagster_home_template: Path) -> None:
    plain = _trial(_small_template, tmp_path, _dagster_home_template)
    reference = plain.run()
    plain.close()
    assert reference.code == 0, reference.stderr[-2000:]
    calls = len(plain.llm.requests)
    assert calls > 20
    # early in the diagnosis, in its middle, and after its last call (the freeze and checks)
    for at_calls in (4, calls // 2, calls):
        trial = _trial(_small_template, tmp_path, _dagster_home_template)
        try:
            killed, received, _ = killpg_at(trial, 0, at_calls)
            store = trial.config.parent / "signals.db"
            assert killed.code == -9, killed.stderr[-2000:]  # killed, not ended
            in_flight = received - judged(store)
            assert 0 <= in_flight <= 2 * trial.concurrency  # calls, and answers being stored
            assert store_problems(store) == []
            assert split_leftovers(trial.config.parent) == []
            again = trial.run()
            assert again.code == 0, again.stderr[-2000:]
            assert again.pools() == reference.pools()
            assert received + (len(trial.llm.requests) - received) - calls <= in_flight
            assert not again.traceback
        finally:
            trial.close()


@pytest.mark.timeout(300)
def test_postgresql_stopped_mid_diagnosis(_small_template: Path, tmp_path: Path,
                                          _dagster_home_template: Path, pg: Postgres) -> None:
    """One line naming the database, a non-zero exit within 30 s, no traceback; the leases
    left are a dead process's (taken over at once), and the re-run completes once the server
    is back. (The session's server: this pytest worker runs one test at a time, and the
    server is up again when the test ends.)"""
    import time

    url = pg.create_database(f"stopped{next(_N)}")
    trial = _trial(_small_template, tmp_path, _dagster_home_template, url)
    try:
        proc = trial.start()
        started = time.monotonic()
        while proc.poll() is None and len(trial.llm.requests) < 8:
            time.sleep(0.005)
        at = time.monotonic()
        pg.stop()
        try:
            ended = wait(proc, started, at)
        finally:
            pg.start()
        assert ended.code == 2, ended.stderr[-2000:]
        assert ended.after_fault_s is not None and ended.after_fault_s < 30
        assert not ended.traceback, ended.stderr[-3000:]
        errors = [line for line in ended.stderr.splitlines() if line.startswith("error:")]
        assert errors == [ended.stderr.strip().splitlines()[-1]]
        assert url in errors[0] and "the connection is lost" in errors[0], errors[0]
        assert store_problems(url) == []
        again = trial.run()
        assert again.code == 0, again.stderr[-2000:]
        assert again.wall_s < 60  # no lease waited out its time to live
    finally:
        trial.close()
