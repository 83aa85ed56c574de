"""The signal store's schema, written once in SQLite's spelling (``signals_pg`` derives
PostgreSQL's from it), its version, and the migration of a SQLite store of an earlier
release."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable

SCHEMA_VERSION = 7  # 1 was the first release, which did not stamp a version (user_version 0)


SCHEMA = """
CREATE TABLE IF NOT EXISTS signals (
    question_id TEXT NOT NULL,
    baseline_run_id TEXT NOT NULL,
    diag_fingerprint TEXT NOT NULL,
    video_id TEXT NOT NULL,
    task_type TEXT NOT NULL,
    tier TEXT NOT NULL CHECK (tier IN ('T0', 'T1', 'T2')),
    error_type TEXT,
    cause_category TEXT,
    evolution_target TEXT,
    degraded INTEGER NOT NULL DEFAULT 0,
    infra INTEGER NOT NULL DEFAULT 0,
    session_id TEXT,
    rationale TEXT,
    confidence REAL,
    reported_model TEXT,
    prompt_tokens INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    latency_ms REAL NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL,
    updated_at REAL NOT NULL DEFAULT 0,
    PRIMARY KEY (question_id, baseline_run_id, diag_fingerprint)
);
CREATE TABLE IF NOT EXISTS llm_cache (
    key TEXT PRIMARY KEY,
    response TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS llm_calls (
    diag_fingerprint TEXT NOT NULL,
    question_id TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    status TEXT NOT NULL,
    latency_ms REAL NOT NULL,
    prompt_tokens INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    cache_hit INTEGER NOT NULL DEFAULT 0,
    reported_model TEXT,
    created_at TEXT NOT NULL,
    cached_tokens INTEGER NOT NULL DEFAULT 0,
    concurrency INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS llm_calls_fp ON llm_calls (diag_fingerprint);
CREATE TABLE IF NOT EXISTS leases (
    baseline_run_id TEXT NOT NULL,
    diag_fingerprint TEXT NOT NULL,
    question_id TEXT NOT NULL,
    owner TEXT NOT NULL,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    expires_at REAL NOT NULL,
    heartbeat_at REAL NOT NULL,
    PRIMARY KEY (baseline_run_id, diag_fingerprint, question_id)
);
CREATE INDEX IF NOT EXISTS leases_owner ON leases (owner);
CREATE TABLE IF NOT EXISTS review_labels (
    baseline_run_id TEXT NOT NULL,
    question_id TEXT NOT NULL,
    reviewer TEXT NOT NULL,
    video_id TEXT NOT NULL,
    task_type TEXT NOT NULL,
    tier TEXT NOT NULL CHECK (tier IN ('T1', 'T2')),
    error_type TEXT,
    sampling_weight REAL NOT NULL CHECK (sampling_weight > 0),
    stratum TEXT NOT NULL DEFAULT '',
    notes TEXT NOT NULL DEFAULT '',
    imported_at TEXT NOT NULL,
    PRIMARY KEY (baseline_run_id, question_id, reviewer)
);
CREATE TABLE IF NOT EXISTS fingerprints (
    diag_fingerprint TEXT PRIMARY KEY,
    components TEXT NOT NULL,
    recorded_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS evaluations (
    split_id TEXT NOT NULL,
    pool TEXT NOT NULL,
    run_id TEXT NOT NULL,
    answers_digest TEXT NOT NULL,
    source TEXT NOT NULL,
    statistic TEXT NOT NULL,
    shown TEXT NOT NULL,
    is_repeat INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS evaluations_split ON evaluations (split_id, pool);
CREATE TABLE IF NOT EXISTS test_exposure (
    baseline TEXT NOT NULL,
    pools_sha256 TEXT NOT NULL,
    split_id TEXT NOT NULL,
    answers_digest TEXT NOT NULL,
    run_id TEXT NOT NULL,
    question_ids TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (baseline, pools_sha256, answers_digest)
);
CREATE TABLE IF NOT EXISTS frozen_splits (
    baseline TEXT NOT NULL,
    baseline_run_id TEXT NOT NULL,
    diag_fingerprint TEXT NOT NULL,
    split_id TEXT NOT NULL,
    pools_sha256 TEXT NOT NULL,
    pools TEXT NOT NULL,
    frozen_at TEXT NOT NULL,
    PRIMARY KEY (diag_fingerprint, split_id, pools_sha256)
);
"""


ADD_CONCURRENCY = "ALTER TABLE llm_calls ADD COLUMN concurrency INTEGER NOT NULL DEFAULT 0"


def upsert_sql(table: str, columns: tuple[str, ...], key: tuple[str, ...]) -> str:
    """INSERT ... ON CONFLICT DO UPDATE (replacing every other column): SQLite (3.24+) and
    PostgreSQL alike, unlike SQLite's INSERT OR REPLACE."""
    others = ", ".join(f"{c} = excluded.{c}" for c in columns if c not in key)
    return (f"INSERT INTO {table} ({', '.join(columns)}) VALUES "
            f"({', '.join('?' for _ in columns)}) ON CONFLICT ({', '.join(key)}) DO UPDATE SET "
            f"{others}")


def migrate_sqlite(conn: sqlite3.Connection) -> None:
    """Create the tables, or bring a store of an earlier release up to SCHEMA_VERSION, in one
    transaction."""
    # 0 -> 2: signals gains updated_at, leases are new; 2 -> 3: fingerprints are new;
    # 3 -> 4: llm_calls gains cached_tokens, review labels are new; 4 -> 5: the evaluation
    # ledger is new; 5 -> 6: llm_calls gains concurrency (the judge's limit when sent);
    # 6 -> 7: test_exposure (which test questions each look showed, across splits) and
    # frozen_splits (every split frozen, for the import gate) are new
    conn.execute("BEGIN IMMEDIATE")
    try:
        for statement in SCHEMA.split(";"):
            if statement.strip():
                conn.execute(statement)
        columns = {r[1] for r in conn.execute("PRAGMA table_info(signals)")}
        if "updated_at" not in columns:
            conn.execute("ALTER TABLE signals ADD COLUMN updated_at REAL NOT NULL DEFAULT 0")
        calls = {r[1] for r in conn.execute("PRAGMA table_info(llm_calls)")}
        if "cached_tokens" not in calls:
            conn.execute("ALTER TABLE llm_calls ADD COLUMN cached_tokens INTEGER NOT NULL "
                         "DEFAULT 0")
        if "concurrency" not in calls:
            conn.execute(ADD_CONCURRENCY)
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        conn.commit()
    except BaseException:
        conn.rollback()
        raise


def prepare_sqlite(conn: sqlite3.Connection, schema: Callable[[], object], wal: bool,
                   deadline: float) -> None:
    """WAL mode (``wal``) and ``schema`` (the migration, or only the version check of a
    read-only open). Two runs opening a new store at the same moment can deadlock on the
    journal-mode switch, where SQLite answers "locked" at once instead of waiting: retried
    until ``deadline``."""
    while True:
        try:
            if wal:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")
            schema()
            return
        except sqlite3.OperationalError as exc:
            if not ("locked" in str(exc) or "busy" in str(exc)) or time.monotonic() >= deadline:
                raise
            if conn.in_transaction:
                conn.rollback()
            time.sleep(0.02)
