"""The signal store (``paths.signals_db``): diagnoses, the judge's response cache, per-call
telemetry and per-question leases, in one SQLite file (the default) or a PostgreSQL database
(a ``postgresql://`` URL: signals_pg.py; the same schema, SQL and semantics).

Rows are keyed by (question_id, baseline_run_id, diag_fingerprint) and upserted, so writing the
same row twice changes nothing; every row is committed as soon as it is written, so a crash never
loses a finished diagnosis. A question is diagnosed only under a lease (owner, host, pid, expiry,
heartbeat) claimed in one transaction, so two runs of one partition never pay twice for it; the
lease of a worker that died expires (at once when it ran on this host) and is taken over.

The store carries a schema version (SQLite: ``PRAGMA user_version``); a store written by an
earlier release is migrated in place when it is opened. The SQL here is written once for both
engines: ``?`` placeholders and SQLite's spelling, which ``signals_pg.pg_sql`` translates.

A safety net behind the judge's own redaction (``judge/chat_client.py``): every text written from
an endpoint's answer (a diagnosis's free text, a cached response, a call's status and reported
model) is redacted of the credentials the environment configures (``lib/redact.py``).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any, ClassVar

from split_assets.config_keys import config_key
from split_assets.errors import UserError
from split_assets.store.conventions import (
    BUSY_TIMEOUT_S,
    env_seconds,
    sqlite_errors,
)
from split_assets.store.leases import Leases
from split_assets.store.ledger import Ledger
from split_assets.store.records import LABEL_COLUMNS, Records, ReviewLabel
from split_assets.store.signal_rows import ROW_COLUMNS, ROW_KEY, SignalRow, SignalRows
from split_assets.store.tables import (
    SCHEMA,
    SCHEMA_VERSION,
    migrate_sqlite,
    prepare_sqlite,
    upsert_sql,
)
from split_assets.store.telemetry import Telemetry

__all__ = ["LABEL_COLUMNS", "ROW_COLUMNS", "ROW_KEY", "SCHEMA", "SCHEMA_VERSION", "ReviewLabel",
           "SignalRow", "SignalStore", "upsert_sql"]

class SignalStore(SignalRows, Leases, Telemetry, Records, Ledger):
    """The signal store on SQLite (WAL mode; safe to read while another run writes), and the
    operations both engines share: a backend overrides the hooks below (``_x``, ``_xm``,
    ``_errors``, ``now``, ``_held_leases``, the schema version, ``close``)."""

    # errors of reading a table an earlier release did not have (a store opened read-only)
    _OLD_STORE: ClassVar[tuple[type[Exception], ...]] = (sqlite3.OperationalError,)
    location: str  # the file or URL, for messages

    @classmethod
    def for_reading(cls, path: Path, required: bool = False) -> SignalStore:
        """The store to read, without creating or migrating anything on disk (a read-only copy
        works too): an empty store in memory when the file does not exist yet (a dry run
        writes nothing), or an error when ``required``."""
        if not path.is_file() and not required:
            return cls(Path(":memory:"))
        return cls(path, create=False, migrate=False)

    def __init__(self, path: Path, create: bool = True, migrate: bool = True,
                 timeout_s: float | None = None) -> None:
        self.path = path
        self.location = str(path)
        self._busy_s = timeout_s or env_seconds("SPLIT_ASSETS_DB_TIMEOUT_S", BUSY_TIMEOUT_S, 0.1)
        if str(path) == ":memory:":
            self._conn = sqlite3.connect(":memory:")
            self._migrate()
            return
        if path.is_dir():
            raise UserError(f"the signal store is a folder: {path}", config_key("signals_db"),
                            f"point {config_key('signals_db')} at a file (it is created on first "
                            "use)")
        if not create and not path.is_file():
            raise UserError(f"signal store not found: {path}", config_key("signals_db"),
                            "run 'split-assets run' first, or pass the config the split was "
                            "made with")
        # files this open creates are removed again if it fails (a full disk, a read-only
        # folder): a failed run leaves no empty store, -wal or -shm behind
        companions = [path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")]
        new_files = [f for f in companions if not f.exists()]
        with sqlite_errors(path, "open"):
            if create:
                path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(path, timeout=self._busy_s)
        try:
            with sqlite_errors(path, "open", self._busy_s):
                prepare_sqlite(self._conn, self._migrate if migrate else self._check_version,
                               migrate, time.monotonic() + self._busy_s)
        except UserError as exc:
            self._conn.close()
            if any(word in exc.what for word in ("disk", "readonly", "read-only", "full")):
                # nothing could be written: remove what this open created (never on a lock or
                # an interrupt, when another run may be creating the same store right now)
                for created in new_files:
                    if created.exists() and created.stat().st_size == 0 or created != path:
                        created.unlink(missing_ok=True)
            raise
        except BaseException:
            self._conn.close()
            raise

    def _check_version(self) -> int:
        version = int(self._conn.execute("PRAGMA user_version").fetchone()[0])
        if version > SCHEMA_VERSION:
            raise UserError(f"the signal store has schema version {version}; this release "
                            f"reads up to {SCHEMA_VERSION}",
                            f"{config_key('signals_db')} {self.path}",
                            f"upgrade split_assets, or point {config_key('signals_db')} at another "
                            "file")
        return version

    def _migrate(self) -> None:
        """Create the tables, or bring a store of an earlier release up to SCHEMA_VERSION."""
        if self._check_version() != SCHEMA_VERSION:
            migrate_sqlite(self._conn)

    @property
    def schema_version(self) -> int:
        return int(self._conn.execute("PRAGMA user_version").fetchone()[0])

    def close(self) -> None:
        try:
            self._conn.commit()
        finally:
            self._conn.close()

    def __enter__(self) -> SignalStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- what a backend overrides -------------------------------------------------------------

    def now(self) -> float:
        """The store's clock (epoch seconds) for lease expiries and write times: on a shared
        server, the server's, so that machines whose clocks differ agree on what expired."""
        return time.time()

    def _errors(self, doing: str) -> AbstractContextManager[None]:
        """The engine's errors as one line naming the store."""
        return sqlite_errors(self.path, doing, self._busy_s)

    def _x(self, sql: str, params: Iterable[Any] = ()) -> Any:
        return self._conn.execute(sql, tuple(params))

    def _xm(self, sql: str, rows: Iterable[Iterable[Any]]) -> int:
        """Run ``sql`` once per row; the rows it changed."""
        cursor = self._conn.cursor()
        cursor.executemany(sql, rows)
        return max(0, cursor.rowcount)

    @contextmanager
    def _tx(self) -> Iterator[None]:
        """One transaction (with what is pending): committed, or rolled back on an error."""
        try:
            yield
            self._conn.commit()
        except BaseException:
            self._conn.rollback()
            raise

    def flush(self) -> None:
        """Commit what is pending (telemetry and cache rows written since the last row)."""
        with self._errors("write"):
            self._conn.commit()

    def count(self) -> int:
        return int(self._x("SELECT COUNT(*) FROM signals").fetchone()[0])
