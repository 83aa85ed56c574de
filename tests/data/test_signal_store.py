"""The signal store: schema version and migration, leases, and reads that write nothing."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from split_assets.data.leases import LeaseOwner
from split_assets.data.signals import SCHEMA_VERSION, SignalRow, SignalStore
from split_assets.errors import UserError

RELEASE1 = Path(__file__).parents[1] / "fixtures" / "signals_release1.db"
RUN, FP = "baseline-2026-01", "fp-c541091cfed7"


def row(qid: str, tier: str = "T1", **kw) -> SignalRow:  # noqa: ANN003
    return SignalRow(question_id=qid, baseline_run_id="r", diag_fingerprint="fp-x",
                     video_id="v", task_type="OCR Problems", tier=tier, **kw)


def owner(name: str, pid: int | None = None) -> LeaseOwner:
    me = LeaseOwner.this_process()
    return LeaseOwner(f"{me.host}:{name}", me.host, pid if pid is not None else me.pid)


def test_a_store_of_the_first_release_is_migrated_in_place(tmp_path: Path) -> None:
    db = tmp_path / "signals.db"
    shutil.copyfile(RELEASE1, db)
    old = sqlite3.connect(db)
    columns = [r[1] for r in old.execute("PRAGMA table_info(signals)")]
    select = f"SELECT {', '.join(columns)} FROM signals ORDER BY question_id"
    before = old.execute(select).fetchall()
    cache = old.execute("SELECT * FROM llm_cache").fetchall()
    calls = old.execute("SELECT * FROM llm_calls ORDER BY rowid").fetchall()
    assert old.execute("PRAGMA user_version").fetchone()[0] == 0
    old.close()
    with SignalStore(db) as store:
        assert store.schema_version == SCHEMA_VERSION
        assert len(store.rows(RUN, FP)) == len(before) == 9
        assert store.done_question_ids(RUN, FP) == {r[0] for r in before}
        assert store.call_statuses("fp-000000000000") == {"cache_hit": 1, "ok": 1, "timeout": 1}
        assert store.claim(RUN, FP, ["new-q"], owner("a"), 1, 60).claimed == ["new-q"]
    conn = sqlite3.connect(db)
    assert conn.execute(select).fetchall() == before  # every row and value kept
    assert "updated_at" in {r[1] for r in conn.execute("PRAGMA table_info(signals)")}
    assert conn.execute("SELECT * FROM llm_cache").fetchall() == cache
    # every call kept; cached_tokens (schema 4) added, 0 for calls made before it existed
    assert conn.execute("SELECT * FROM llm_calls ORDER BY rowid").fetchall() == [
        (*c, 0) for c in calls]
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    conn.close()
    with SignalStore(db) as store:  # opening a migrated store again changes nothing
        assert store.schema_version == SCHEMA_VERSION


def test_a_store_of_a_newer_release_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "signals.db"
    conn = sqlite3.connect(db)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(UserError, match="schema version"):
        SignalStore(db)


def test_reading_a_store_leaves_no_wal_or_shm_and_a_missing_one_is_not_created(
        tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    db = ws / "signals.db"
    store = SignalStore.for_reading(db)
    assert store.done_question_ids("r", "fp-x") == set()
    store.close()
    assert list(ws.iterdir()) == []
    with SignalStore(db) as store:
        store.upsert(row("q1"))
    store = SignalStore.for_reading(db)
    assert store.done_question_ids("r", "fp-x") == {"q1"}
    store.close()
    assert sorted(p.name for p in ws.iterdir()) == ["signals.db"]


def test_infra_rows_are_not_finished_diagnoses(tmp_path: Path) -> None:
    # an answer that was INFRA under other infra_stop_reasons is judged, not skipped
    with SignalStore(tmp_path / "s.db") as store:
        store.upsert_many([row("q1", tier="T0", infra=True), row("q2"),
                           row("q3", degraded=True)])
        assert store.done_question_ids("r", "fp-x") == {"q2"}


def test_two_workers_claim_disjoint_questions_and_skip_finished_ones(tmp_path: Path) -> None:
    with SignalStore(tmp_path / "s.db") as store:
        store.upsert(row("q0"))
        a, b = owner("a"), owner("b")
        qids = [f"q{i}" for i in range(6)]
        first = store.claim("r", "fp-x", qids, a, 3, 60)
        assert first.claimed == ["q1", "q2", "q3"] and first.unclaimed == ["q4", "q5"]
        second = store.claim("r", "fp-x", qids, b, 3, 60)
        assert second.claimed == ["q4", "q5"] and second.foreign == ["q1", "q2", "q3"]
        assert store.foreign_leases("r", "fp-x", qids, b).count == 3
        # a finished row drops its lease in the same transaction
        store.upsert_many([row("q1")], release=a)
        assert store.claim("r", "fp-x", qids, b, 3, 60).foreign == ["q2", "q3"]
        store.release(a)
        assert store.claim("r", "fp-x", qids, b, 3, 60).claimed == ["q2", "q3", "q4"]


def test_an_expired_lease_is_taken_over(tmp_path: Path) -> None:
    with SignalStore(tmp_path / "s.db") as store:
        store.claim("r", "fp-x", ["q1"], owner("a"), 1, ttl_s=0.05)
        assert store.claim("r", "fp-x", ["q1"], owner("b"), 1, 60).foreign == ["q1"]
        time.sleep(0.1)
        assert store.claim("r", "fp-x", ["q1"], owner("b"), 1, 60).claimed == ["q1"]


def test_a_heartbeat_keeps_a_lease_alive(tmp_path: Path) -> None:
    with SignalStore(tmp_path / "s.db") as store:
        a = owner("a")
        store.claim("r", "fp-x", ["q1"], a, 1, ttl_s=0.2)
        time.sleep(0.1)
        store.heartbeat(a, ttl_s=0.2)
        time.sleep(0.15)
        assert store.claim("r", "fp-x", ["q1"], owner("b"), 1, 60).foreign == ["q1"]


def test_the_lease_of_a_dead_process_on_this_host_is_taken_over_at_once(
        tmp_path: Path) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    pid = int(dead.stdout)
    with SignalStore(tmp_path / "s.db") as store:
        store.claim("r", "fp-x", ["q1", "q2"], owner("gone", pid), 2, ttl_s=3600)
        store.claim("r", "fp-x", ["q3"], owner("alive", os.getppid()), 1, ttl_s=3600)
        taken = store.claim("r", "fp-x", ["q1", "q2", "q3"], owner("me"), 5, 60)
        assert taken.claimed == ["q1", "q2"] and taken.foreign == ["q3"]


def test_signal_store_that_is_a_folder_is_one_clear_error(tmp_path: Path) -> None:
    (tmp_path / "signals.db").mkdir()
    with pytest.raises(UserError, match="is a folder"):
        SignalStore(tmp_path / "signals.db")
