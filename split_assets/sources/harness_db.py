"""The harness database: its schema (defined here once, for every writer: the demo generator
and the importers), and read-only access for the pipeline: canonical predictions, letters,
traces."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from split_assets.config_keys import config_key
from split_assets.errors import InputError
from split_assets.lib.canonical import digest_of, digest_of_list
from split_assets.sources.benchmark import Benchmark
from split_assets.sources.letters import letter_of

TRACE_KINDS = ("thought", "tool_call", "observation", "answer")


@dataclass(frozen=True, slots=True)
class CanonicalPrediction:
    """The one prediction of a question in a run, normalized to a letter."""

    question_id: str
    video_id: str
    task_type: str
    difficulty: str
    answer: str
    letter: str
    correct: bool
    infra: bool
    stop_reason: str | None
    missing: bool
    session_id: str | None
    raw_response: str | None


# How long a read waits for the agent's write lock before giving up (seconds; a module
# constant so tests can lower it).
HARNESS_LOCK_TIMEOUT_S = 10.0


def _db_error(exc: sqlite3.Error, path: Path) -> InputError:
    """A sqlite3 error on the harness db as the one-line error the CLI prints."""
    reason = str(exc) or type(exc).__name__
    where = f"{config_key('harness_db')} {path}"
    if "not a database" in reason or "file is encrypted" in reason:
        return InputError(f"the harness database is not a SQLite database ({reason})", where,
                          f"point {config_key('harness_db')} at the agent's SQLite database")
    if "locked" in reason or "busy" in reason:
        return InputError(f"the harness database stayed locked for {HARNESS_LOCK_TIMEOUT_S:g} s "
                          f"({reason})", where, "wait for the agent to finish writing, or copy "
                          f"the database and point {config_key('harness_db')} at the copy")
    return InputError(f"cannot read the harness database ({type(exc).__name__}: {reason})",
                      where, "check the file (sqlite3 FILE 'PRAGMA integrity_check'), or point "
                             f"{config_key('harness_db')} at a good copy")


@contextmanager
def open_readonly(path: Path) -> Iterator[sqlite3.Connection]:
    """Open a SQLite file read-only (``mode=ro``): the pipeline never writes the harness db.

    A sqlite3 error anywhere in the block (not a database, locked past
    ``HARNESS_LOCK_TIMEOUT_S``, corrupt) becomes an InputError naming paths.harness_db.
    """
    if not path.is_file():
        raise InputError(f"harness database not found: {path}", config_key("harness_db"),
                         f"point {config_key('harness_db')} at the agent's SQLite database")
    # as_uri() percent-encodes '?', '#' and '%' in the path, which the URI would misread
    uri = f"{path.resolve().as_uri()}?mode=ro"
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=HARNESS_LOCK_TIMEOUT_S)
    except sqlite3.Error as exc:
        raise _db_error(exc, path) from None
    try:
        yield conn
    except sqlite3.Error as exc:
        raise _db_error(exc, path) from None
    finally:
        conn.close()


_MAKE_ONE = (f"point {config_key('harness_db')} at the agent's harness db, or make one from "
             "published "
             "results: split-assets import videomme|lmms-eval|vlmevalkit|predictions ... "
             "--workspace DIR (docs/how-to/import.md)")


def require_table(conn: sqlite3.Connection, table: str, columns: Iterable[str], db: Path) -> None:
    cols = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
    if not cols:
        tables = [r[0] for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY 1")]
        where = f"{config_key('harness_db')} {db}"
        if not tables:  # SQLite reads an empty file as an empty database
            size = db.stat().st_size
            raise InputError("the harness database is empty (" + (
                "0 bytes" if size == 0 else "no tables") + "): not a harness db", where,
                _MAKE_ONE)
        if "predictions" not in tables:
            shown = ", ".join(tables[:5]) + (", ..." if len(tables) > 5 else "")
            raise InputError(f"not a harness db: no table 'predictions' (its tables: {shown})",
                             where, _MAKE_ONE)
        raise InputError(f"harness database has no table '{table}'", where,
                         "see docs/explanation/inputs-and-assets.md for the schema")
    missing = [c for c in columns if c not in cols]
    if missing:
        raise InputError(f"table '{table}' lacks column(s) {', '.join(missing)}", str(db),
                         "see docs/explanation/inputs-and-assets.md for the schema")


#: The harness db's tables as (column, SQL type), in column order. The pipeline only reads
#: them; the demo generator and the importers create them with :func:`create_tables`.
PREDICTIONS_SCHEMA: tuple[tuple[str, str], ...] = (
    ("run_id", "TEXT"), ("question_id", "TEXT"), ("prediction", "TEXT"),
    ("raw_response", "TEXT"), ("stop_reason", "TEXT"), ("attempt", "INTEGER"),
    ("created_at", "TEXT"), ("session_id", "TEXT"),
)
TRACES_SCHEMA: tuple[tuple[str, str], ...] = (
    ("run_id", "TEXT"), ("question_id", "TEXT"), ("step", "INTEGER"), ("kind", "TEXT"),
    ("content", "TEXT"),
)
_PRED_COLUMNS = tuple(name for name, _ in PREDICTIONS_SCHEMA)
TRACE_COLUMNS = tuple(name for name, _ in TRACES_SCHEMA)


def create_tables(conn: sqlite3.Connection) -> None:
    """Create the ``predictions`` and ``traces`` tables where they do not exist yet."""
    for table, schema in (("predictions", PREDICTIONS_SCHEMA), ("traces", TRACES_SCHEMA)):
        columns = ", ".join(f"{name} {sql_type}" for name, sql_type in schema)
        conn.execute(f"CREATE TABLE IF NOT EXISTS {table} ({columns})")


def _insert(conn: sqlite3.Connection, table: str, columns: Sequence[str],
            rows: Iterable[Sequence[Any]]) -> None:
    marks = ", ".join("?" for _ in columns)
    conn.executemany(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})", rows)


def insert_predictions(conn: sqlite3.Connection, rows: Iterable[Sequence[Any]]) -> None:
    """Insert prediction rows, each with the values of :data:`PREDICTIONS_SCHEMA` in order."""
    _insert(conn, "predictions", _PRED_COLUMNS, rows)


def insert_traces(conn: sqlite3.Connection, rows: Iterable[Sequence[Any]]) -> None:
    """Insert trace rows, each with the values of :data:`TRACES_SCHEMA` in order."""
    _insert(conn, "traces", TRACE_COLUMNS, rows)


def run_ids(db: Path) -> list[str]:
    """Every run id present in the predictions table."""
    with open_readonly(db) as conn:
        require_table(conn, "predictions", _PRED_COLUMNS, db)
        return [r[0] for r in conn.execute("SELECT DISTINCT run_id FROM predictions ORDER BY 1")]


def run_digest(db: Path, run_id: str) -> str:
    """Digest of a run's answers as stored (question, prediction, response, stop reason,
    attempt), independent of row order and of when the rows were written."""
    with open_readonly(db) as conn:
        require_table(conn, "predictions", _PRED_COLUMNS, db)
        rows = conn.execute(
            "SELECT question_id, prediction, raw_response, stop_reason, attempt "
            "FROM predictions WHERE run_id = ?", (run_id,)).fetchall()
    return digest_of(sorted([[str(c) if c is not None else None for c in r] for r in rows],
                            key=lambda r: [c or "" for c in r]))


def _rows_by_question(db: Path, run_id: str) -> Iterator[tuple[str, list[tuple[Any, ...]]]]:
    """The run's prediction rows, one question's at a time (question id as text), streamed
    from one sorted cursor: at 300,000 rows none is held past its question, which keeps the
    process's peak memory at what it keeps. A run id with no rows is refused, naming the runs
    present."""
    with open_readonly(db) as conn:
        require_table(conn, "predictions", _PRED_COLUMNS, db)
        cursor = conn.execute(
            "SELECT CAST(question_id AS TEXT) AS qid, prediction, raw_response, stop_reason,"
            " attempt, created_at, session_id FROM predictions WHERE run_id = ? ORDER BY qid",
            (run_id,))
        group: list[tuple[Any, ...]] = []
        for row in cursor:
            if group and row[0] != group[0][0]:
                yield str(group[0][0]), group
                group = []
            group.append(row)
        if group:
            yield str(group[0][0]), group
        else:
            present = [r[0] for r in conn.execute(
                "SELECT DISTINCT run_id FROM predictions ORDER BY 1")]
            shown = ", ".join(present[:10]) + (" ..." if len(present) > 10 else "")
            raise InputError(f"run id {run_id!r} not in the harness database (runs present: "
                             f"{shown or 'none'})", config_key("baseline_run_id"),
                             "set baseline_run_id to one of the runs present")


def _attempt(value: Any, run_id: str, question_id: str) -> int:
    """The ``attempt`` column as an integer (NULL or '' count as 0, as always)."""
    if value is None or value == "":
        return 0
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            pass
    raise InputError(f"attempt {value!r} of question {question_id!r} is not an integer",
                     f"harness db predictions, run {run_id!r}, question {question_id!r}",
                     "store attempt as an integer (1, 2, ...)")


def wrong_to_diagnose(preds: Iterable[CanonicalPrediction]) -> list[CanonicalPrediction]:
    """Wrong, non-INFRA answers: the ones the judge sees (the rule, decided here once)."""
    return [p for p in preds if not p.correct and not p.infra]


def canonical_predictions(db: Path, run_id: str, benchmark: Benchmark,
                          infra_stop_reasons: Iterable[str],
                          missing_policy: str = "error") -> list[CanonicalPrediction]:
    """One prediction per benchmark question, by the greatest (attempt, created_at).

    Fails on predictions for unknown questions, on ties with different content, and (unless
    ``missing_policy == 'infra'``) on benchmark questions without a prediction.
    """
    infra_reasons = set(infra_stop_reasons)
    shared: dict[Any, Any] = {}  # one object for the stop reasons and replies that repeat
    made: dict[str, CanonicalPrediction] = {}
    unknown: set[str] = set()
    for qid, rows in _rows_by_question(db, run_id):
        q = benchmark.by_id.get(qid)
        if q is None:
            unknown.add(qid)
            continue
        # the greatest (attempt, created_at); only rows tied at that key must agree
        keyed = [((_attempt(row[4], run_id, qid), str(row[5] or "")), row) for row in rows]
        top = max(key for key, _ in keyed)
        row = _chosen(qid, top, [row for key, row in keyed if key == top], run_id)
        made[qid] = _canonical(q, row, infra_reasons, benchmark.letter_rule, shared)
    if unknown:
        shown = ", ".join(sorted(unknown)[:5])
        raise InputError(f"{len(unknown)} prediction(s) for questions not in the benchmark "
                         f"(e.g. {shown})", f"harness db run {run_id!r}",
                         f"use the benchmark the run was made on ({config_key('questions_dir')})")
    missing = [qid for qid in benchmark.by_id if qid not in made]
    if missing and missing_policy != "infra":
        raise InputError(f"{len(missing)} benchmark question(s) have no prediction in run "
                         f"{run_id!r} (e.g. {', '.join(missing[:5])})", "video_split",
                         "complete the run, or set missing_predictions: infra to count them as "
                         "INFRA (T0)")
    return [made.get(q.question_id) or _canonical(q, None, infra_reasons, benchmark.letter_rule,
                                                   shared) for q in benchmark.questions]


def _chosen(qid: str, top: tuple[int, str], tied: list[tuple[Any, ...]],
            run_id: str) -> tuple[Any, ...]:
    """The row of a question among those tied at its greatest (attempt, created_at): they must
    agree, whatever their order in the db; the choice then only picks the session id, by value."""
    if len({tuple(row[1:4]) for row in tied}) > 1:
        raise InputError(
            f"question {qid!r} has {len(tied)} predictions with the same attempt {top[0]} and "
            f"created_at {top[1]!r} but different content", f"harness db run {run_id!r}",
            "remove the duplicate row or give it a later attempt")
    return min(tied, key=lambda r: (r[6] is not None, str(r[6] or "")))


def _canonical(q: Any, row: tuple[Any, ...] | None, infra_reasons: set[str],
               rule: str, shared: dict[Any, Any]) -> CanonicalPrediction:
    """A benchmark question's canonical prediction from its chosen row (None: missing)."""
    if row is None:
        return CanonicalPrediction(q.question_id, q.video_id, q.task_type, q.difficulty,
                                   q.answer, "", False, True, None, True, None, None)
    letter = letter_of(rule, row[2], row[1], q.options)
    correct = letter == q.answer
    stop = shared.setdefault(row[3], row[3])
    infra = not correct and (letter == "" or stop in infra_reasons)
    return CanonicalPrediction(q.question_id, q.video_id, q.task_type, q.difficulty, q.answer,
                               letter, correct, infra, stop, False, row[6],
                               shared.setdefault(raw := row[2] if row[2] is not None else row[1],
                                                 raw))


def predictions_digest(preds: list[CanonicalPrediction]) -> str:
    """Digest of the canonical predictions: independent of the db's row order."""
    return digest_of_list([p.question_id, p.letter, p.correct, p.infra, p.stop_reason]
                          for p in sorted(preds, key=lambda p: p.question_id))
