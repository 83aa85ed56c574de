"""The signal store on PostgreSQL (``paths.signals_db: postgresql://user@host/db``): the same
schema, statements and semantics as the SQLite store (signals.py), through psycopg 3 with one
connection pool per process and URL. Several machines share it: leases are claimed with
``SELECT ... FOR UPDATE SKIP LOCKED``, so concurrent claims take disjoint questions.

Credentials never appear in the URL (it is logged, written to manifests and shown in errors):
libpq takes them from its environment (``PGPASSWORD``, ``PGSERVICEFILE``, ``~/.pgpass``), which
a ``.env`` file may set.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import logging
import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import parse_qs, urlsplit

from split_assets.config_keys import config_key
from split_assets.errors import UserError
from split_assets.store.conventions import BUSY_TIMEOUT_S, env_seconds
from split_assets.store.leases import Held
from split_assets.store.signals import (
    SCHEMA,
    SCHEMA_VERSION,
    SignalStore,
)
from split_assets.store.tables import ADD_CONCURRENCY

if TYPE_CHECKING:
    from psycopg_pool import ConnectionPool

SCHEMES = ("postgresql", "postgres")
# SQLite's REAL is 8 bytes, PostgreSQL's 4: DOUBLE PRECISION keeps every value as SQLite does;
# text compares and sorts bytewise, as in SQLite, whatever the database's locale (rows come
# back in the same order); llm_calls gets the id SQLite's rowid gives (the order of the calls)
PG_SCHEMA = SCHEMA.replace(" REAL", " DOUBLE PRECISION").replace(
    " TEXT", ' TEXT COLLATE "C"').replace(
    "CREATE TABLE IF NOT EXISTS llm_calls (",
    "CREATE TABLE IF NOT EXISTS llm_calls (\n    id BIGSERIAL PRIMARY KEY,").replace(
    "CREATE TABLE IF NOT EXISTS evaluations (",
    "CREATE TABLE IF NOT EXISTS evaluations (\n    id BIGSERIAL PRIMARY KEY,")
_MIGRATION_LOCK = 0x5A17_A55E  # pg_advisory_xact_lock key: one migration at a time
_LEDGER_LOCK = 0x5A17_1ED6  # and one ledger writer at a time (a look budget holds)
_FIX = ("check that the server runs and accepts this user (libpq's PGUSER, PGPASSWORD, "
        "PGSERVICEFILE or ~/.pgpass), then run again (finished diagnoses are kept)")


def is_store_url(location: object) -> bool:
    """Whether ``paths.signals_db`` names a database server rather than a file."""
    return isinstance(location, str) and "://" in location


def check_store_url(url: str, where: str = config_key("signals_db")) -> str:
    """A ``postgresql://`` URL without a password, or one line saying what to do."""
    try:
        parts = urlsplit(url)
        password = parts.password
        query = parse_qs(parts.query)
    except ValueError as exc:  # e.g. an unclosed [ of an IPv6 host
        raise UserError(f"the signal store URL is not a valid URL ({exc})", where,
                        "write it as postgresql://user@host:port/database") from None
    if parts.scheme.lower() not in SCHEMES:
        raise UserError(f"the signal store URL has the scheme {parts.scheme!r}", where,
                        "use a file path (SQLite) or postgresql://user@host/database")
    if password is not None or {"password", "sslpassword"} & set(query):
        # the URL is logged and written to manifests: say so without repeating it
        raise UserError("the signal store URL contains a password", where,
                        "remove it from the URL and set PGPASSWORD (or a PGSERVICEFILE "
                        "service, or ~/.pgpass) in the environment or a .env file")
    return url


@contextmanager
def pg_errors(url: str, doing: str) -> Iterator[None]:
    """A PostgreSQL error on the signal store as one line naming the URL and the cause."""
    import psycopg

    try:
        yield
    except psycopg.Error as exc:
        lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
        cause = lines[0] if lines else type(exc).__name__
        raise UserError(f"cannot {doing} the signal store: {cause}",
                        f"{config_key('signals_db')} {url}",
                        _FIX) from None


@functools.lru_cache(maxsize=512)
def pg_sql(sql: str) -> str:
    """A statement of signals.py in PostgreSQL's dialect."""
    return (sql.replace("?", "%s").replace(" IS NOT excluded.", " IS DISTINCT FROM excluded.")
            .replace("MIN(rowid)", "MIN(id)").replace("ORDER BY rowid", "ORDER BY id"))


def _no_nul(value: Any) -> Any:
    """PostgreSQL text cannot hold NUL, which SQLite stores: a model's answer containing one
    keeps U+FFFD in its place rather than failing the whole commit."""
    return value.replace("\x00", "\ufffd") if isinstance(value, str) and "\x00" in value \
        else value


_POOLS: dict[tuple[int, str], ConnectionPool] = {}


def _require_psycopg(url: str) -> None:
    try:
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401
    except ImportError:
        raise UserError("the PostgreSQL signal store needs psycopg 3 and psycopg-pool",
                        f"{config_key('signals_db')} {url}",
                        f"pip install -e '.[postgres]' (or point {config_key('signals_db')} at a "
                        "file)"
                        ) from None


def _connect_options() -> dict[str, Any]:
    """Every connection: a lock wait ends after SPLIT_ASSETS_DB_TIMEOUT_S (one line, finished
    diagnoses kept) instead of hanging, and TCP keepalives notice a vanished peer in about a
    minute rather than the OS's two hours."""
    lock_ms = int(1000 * env_seconds("SPLIT_ASSETS_DB_TIMEOUT_S", BUSY_TIMEOUT_S, 0.1))
    return {"connect_timeout": 10, "keepalives": 1, "keepalives_idle": 30,
            "keepalives_interval": 10, "keepalives_count": 3,
            "options": f"-c lock_timeout={lock_ms}"}


def _getconn(pool: ConnectionPool, url: str) -> Any:
    """A connection of the pool; when none comes at once, a direct connection says whether the
    server is reachable: if not, the run ends now with its cause (a stopped server refuses in
    milliseconds; the pool would retry for its whole timeout), else the busy pool is awaited."""
    import psycopg
    from psycopg_pool import PoolTimeout

    try:
        return pool.getconn(timeout=2)
    except PoolTimeout:
        with pg_errors(url, "open"):
            psycopg.connect(url, **_connect_options()).close()
    with pg_errors(url, "open"):
        return pool.getconn(timeout=30)


def _pool(url: str) -> ConnectionPool:
    """This process's pool for ``url``: every store opened during a run (the plan, the
    diagnosis, the split, the checks) reuses its connections."""
    key = (os.getpid(), url)
    pool = _POOLS.get(key)
    if pool is None:
        _require_psycopg(url)
        import psycopg
        from psycopg_pool import ConnectionPool

        options = _connect_options()
        with pg_errors(url, "open"):  # the server's own words, not a pool timeout
            psycopg.connect(url, **options).close()
        # the pool's retries ("error connecting ...") stay off the terminal: one line (pg_errors)
        logging.getLogger("psycopg.pool").addHandler(logging.NullHandler())
        logging.getLogger("psycopg.pool").propagate = False
        pool = ConnectionPool(url, min_size=1, max_size=4, open=False, name="split-assets",
                              kwargs={"autocommit": False, **options},
                              check=ConnectionPool.check_connection)
        with pg_errors(url, "open"):
            pool.open(wait=True, timeout=30)
        _POOLS[key] = pool
    return pool


@atexit.register
def _close_pools() -> None:
    for key, pool in list(_POOLS.items()):
        if key[0] == os.getpid():
            pool.close(timeout=1)
    _POOLS.clear()


class PgSignalStore(SignalStore):
    """The signal store in a PostgreSQL database (tables created on first use)."""

    _OLD_STORE: ClassVar[tuple[type[Exception], ...]] = ()  # no earlier release wrote here

    def __init__(self, url: str, create: bool = True, migrate: bool = True,
                 timeout_s: float | None = None) -> None:
        del timeout_s  # SQLite's busy timeout: claims here never wait (SKIP LOCKED)
        self.location = check_store_url(url)
        self._pool = _pool(url)
        self._conn = _getconn(self._pool, url)
        try:
            with self._errors("open"):
                if migrate and create:
                    self._migrate()
                elif self._check_version() == 0:
                    raise UserError(f"signal store not found: {url} has no split_assets tables",
                                    config_key("signals_db"), "run 'split-assets run' first, or "
                                    "copy a store there with 'split-assets signals copy'")
        except BaseException:
            self._give_back()
            raise

    @staticmethod
    def has_tables(url: str) -> bool:
        """Whether the database holds a signal store (split_assets's tables)."""
        pool = _pool(url)
        conn = _getconn(pool, url)
        try:
            with pg_errors(url, "open"):
                return conn.execute("SELECT to_regclass('split_assets_schema')").fetchone()[0]\
                    is not None
        finally:
            with contextlib.suppress(Exception):
                conn.rollback()
            pool.putconn(conn)

    def now(self) -> float:
        return float(self._x("SELECT extract(epoch FROM clock_timestamp())::float8").fetchone()[0])

    def _x(self, sql: str, params: Iterable[Any] = ()) -> Any:
        return self._conn.execute(pg_sql(sql), tuple(map(_no_nul, params)))

    def _xm(self, sql: str, rows: Iterable[Iterable[Any]]) -> int:
        cursor = self._conn.cursor()
        cursor.executemany(pg_sql(sql), (tuple(map(_no_nul, row)) for row in rows))
        return max(0, cursor.rowcount)

    def _errors(self, doing: str) -> Any:
        return pg_errors(self.location, doing)

    def _check_version(self) -> int:
        if self._x("SELECT to_regclass('split_assets_schema')").fetchone()[0] is None:
            return 0
        version = int(self._x("SELECT MAX(version) FROM split_assets_schema").fetchone()[0] or 0)
        if version > SCHEMA_VERSION:
            raise UserError(f"the signal store has schema version {version}; this release "
                            f"reads up to {SCHEMA_VERSION}",
                            f"{config_key('signals_db')} {self.location}",
                            f"upgrade split_assets, or point {config_key('signals_db')} at another "
                            "database")
        return version

    def _migrate(self) -> None:
        """Create the tables (once, whichever of several starting workers comes first)."""
        with self._tx():
            self._x("SELECT pg_advisory_xact_lock(?)", (_MIGRATION_LOCK,))
            if self._check_version() == SCHEMA_VERSION:
                return
            for statement in PG_SCHEMA.split(";"):
                if statement.strip():
                    self._x(statement)
            # 5 -> 6: a column of an existing table (CREATE TABLE IF NOT EXISTS keeps it as it was)
            self._x(ADD_CONCURRENCY.replace("ADD COLUMN", "ADD COLUMN IF NOT EXISTS"))
            self._x("CREATE TABLE IF NOT EXISTS split_assets_schema (version INTEGER NOT NULL)")
            self._x("DELETE FROM split_assets_schema")
            self._x("INSERT INTO split_assets_schema VALUES (?)", (SCHEMA_VERSION,))

    @property
    def schema_version(self) -> int:
        return self._check_version()

    def _lock_ledger(self) -> None:
        self._x("SELECT pg_advisory_xact_lock(?)", (_LEDGER_LOCK,))

    def _held_leases(self, baseline_run_id: str, diag_fingerprint: str,
                     candidates: list[str]) -> tuple[Held, set[str]]:
        """Every candidate gets a lease row (free: no owner, expired), committed; then the rows
        are locked FOR UPDATE SKIP LOCKED: a row another claim has locked is skipped (that
        claim is taking it now), so concurrent claims never wait and never overlap."""
        self._x("INSERT INTO leases SELECT ?, ?, q, '', '', 0, 0, 0 FROM unnest(?::text[]) AS q "
                "ON CONFLICT DO NOTHING", (baseline_run_id, diag_fingerprint, sorted(candidates)))
        self._conn.commit()
        held: Held = {r[0]: tuple(r[1:]) for r in self._x(
            "SELECT question_id, owner, host, pid, expires_at FROM leases WHERE "
            "baseline_run_id = ? AND diag_fingerprint = ? AND question_id = ANY(?) "
            "FOR UPDATE SKIP LOCKED", (baseline_run_id, diag_fingerprint, list(candidates)))}
        return held, set(candidates) - set(held)

    def close(self) -> None:
        from psycopg import pq

        try:
            with self._errors("write"):
                if self._conn.info.transaction_status == pq.TransactionStatus.INERROR:
                    self._conn.rollback()
                else:
                    self._conn.commit()
        finally:
            self._give_back()

    def _give_back(self) -> None:
        from psycopg import pq

        try:
            if self._conn.info.transaction_status != pq.TransactionStatus.IDLE:
                self._conn.rollback()  # a failed open or write: nothing half-done goes back
        except Exception:  # noqa: BLE001 - a broken connection: the pool discards it
            pass
        self._pool.putconn(self._conn)
