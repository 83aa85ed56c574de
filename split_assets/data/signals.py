"""The signal store: one SQLite table of diagnoses in ``paths.signals_db``.

Rows are keyed by (question_id, baseline_run_id, diag_fingerprint) and upserted, so writing the
same row twice changes nothing; every row is committed as soon as it is written, so a crash never
loses a finished diagnosis.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from operator import attrgetter
from pathlib import Path

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
    created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS llm_calls_fp ON llm_calls (diag_fingerprint);
"""


@dataclass(frozen=True, slots=True)
class SignalRow:
    """One diagnosis (or T0 INFRA record) of a wrong answer."""

    question_id: str
    baseline_run_id: str
    diag_fingerprint: str
    video_id: str
    task_type: str
    tier: str
    error_type: str | None = None
    cause_category: str | None = None
    evolution_target: str | None = None
    degraded: bool = False
    infra: bool = False
    session_id: str | None = None
    rationale: str | None = None
    confidence: float | None = None
    reported_model: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0
    created_at: str = ""


_COLUMNS = [f.name for f in fields(SignalRow)]
_KEY = ("question_id", "baseline_run_id", "diag_fingerprint")
# created_at keeps the first write: re-upserting an identical row changes no byte of it.
_UPDATE = ", ".join(f"{c} = excluded.{c}" for c in _COLUMNS if c not in _KEY + ("created_at",))
_UPSERT = (f"INSERT INTO signals ({', '.join(_COLUMNS)}) VALUES "
           f"({', '.join('?' for _ in _COLUMNS)}) ON CONFLICT ({', '.join(_KEY)}) "
           f"DO UPDATE SET {_UPDATE}")


_NOW: tuple[int, str] = (-1, "")


_READ = attrgetter(*_COLUMNS)
_CREATED, _DEGRADED, _INFRA = (_COLUMNS.index(c) for c in ("created_at", "degraded", "infra"))


def utc_now() -> str:
    """Current UTC time, second precision, ISO 8601 with Z (formatted once per second: it
    stamps several rows of every diagnosis)."""
    global _NOW
    second = int(time.time())
    if _NOW[0] != second:
        _NOW = (second, datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
    return _NOW[1]


class SignalStore:
    """SQLite-backed store of signal rows (WAL mode; safe to read while another run writes)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._conn = sqlite3.connect(path, timeout=30)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.executescript(SCHEMA)
        self._conn.commit()

    def close(self) -> None:
        self._conn.commit()
        self._conn.close()

    def __enter__(self) -> SignalStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def upsert(self, row: SignalRow) -> None:
        """Insert or update one row and commit it at once."""
        self.upsert_many([row])

    def upsert_many(self, rows: Iterable[SignalRow]) -> int:
        """Insert or update rows in one transaction; returns how many were written."""
        values = []
        for row in rows:  # rows are flat: a shallow read, not dataclasses.asdict's deep copy
            record = list(_READ(row))
            record[_CREATED] = record[_CREATED] or utc_now()
            record[_DEGRADED] = int(record[_DEGRADED])
            record[_INFRA] = int(record[_INFRA])
            values.append(record)
        with self._conn:
            self._conn.executemany(_UPSERT, values)
        return len(values)

    def rows(self, baseline_run_id: str, diag_fingerprint: str) -> list[SignalRow]:
        """Every row of a (run, fingerprint), sorted by question id."""
        cursor = self._conn.execute(
            f"SELECT {', '.join(_COLUMNS)} FROM signals WHERE baseline_run_id = ? AND "
            "diag_fingerprint = ? ORDER BY question_id", (baseline_run_id, diag_fingerprint))
        out = []
        for values in cursor:
            record = dict(zip(_COLUMNS, values, strict=True))
            record["degraded"] = bool(record["degraded"])
            record["infra"] = bool(record["infra"])
            out.append(SignalRow(**record))
        return out

    def done_question_ids(self, baseline_run_id: str, diag_fingerprint: str) -> set[str]:
        """Questions with a finished, non-degraded row (degraded rows are retried)."""
        cursor = self._conn.execute(
            "SELECT question_id FROM signals WHERE baseline_run_id = ? AND diag_fingerprint = ?"
            " AND degraded = 0", (baseline_run_id, diag_fingerprint))
        return {r[0] for r in cursor}

    # -- the judge's response cache: only valid responses are ever put here ----------------

    def cache_get(self, key: str) -> str | None:
        row = self._conn.execute("SELECT response FROM llm_cache WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def cache_put(self, key: str, response: str) -> None:
        """Written in the open transaction: committed together with the diagnosis row that
        uses it (``upsert``) or by ``flush``, so a crash never keeps one without the other."""
        self._conn.execute("INSERT OR REPLACE INTO llm_cache (key, response, created_at) "
                           "VALUES (?, ?, ?)", (key, response, utc_now()))

    def flush(self) -> None:
        """Commit what is pending (telemetry and cache rows written since the last row)."""
        self._conn.commit()

    # -- per-call telemetry -----------------------------------------------------------------

    def record_call(self, fingerprint: str, question_id: str, attempt: int, status: str,
                    latency_ms: float, prompt_tokens: int = 0, completion_tokens: int = 0,
                    cache_hit: bool = False, reported_model: str | None = None) -> None:
        """One telemetry row, committed with the next diagnosis row or ``flush`` (one commit
        per finished diagnosis instead of three)."""
        self._conn.execute(
            "INSERT INTO llm_calls VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (fingerprint, question_id, attempt, status, latency_ms, prompt_tokens,
             completion_tokens, int(cache_hit), reported_model, utc_now()))

    def reported_models(self, fingerprint: str) -> list[str]:
        """Models the endpoint reported for a fingerprint, first seen first."""
        rows = self._conn.execute(
            "SELECT reported_model, MIN(rowid) FROM llm_calls WHERE diag_fingerprint = ? AND "
            "reported_model IS NOT NULL GROUP BY reported_model ORDER BY 2", (fingerprint,))
        return [r[0] for r in rows]

    def call_statuses(self, fingerprint: str) -> dict[str, int]:
        rows = self._conn.execute("SELECT status, COUNT(*) FROM llm_calls WHERE "
                                  "diag_fingerprint = ? GROUP BY status ORDER BY status",
                                  (fingerprint,))
        return {r[0]: int(r[1]) for r in rows}

    def count(self) -> int:
        return int(self._conn.execute("SELECT COUNT(*) FROM signals").fetchone()[0])
