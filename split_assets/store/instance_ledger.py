"""The test looks of every workspace on one Dagster instance (issue 46): a test budget belongs
to the benchmark and the baseline, so a second workspace made from the same baseline file must
not start a fresh one. Each workspace publishes its own test looks (with the questions they
showed), its frozen splits and its declared ``evaluation.test_looks_max`` here, keyed by the
digest of the baseline's answers; each reads the others' before a look or a freeze
(``evaluation/shared_budget.py``).

Where: the instance's own PostgreSQL database when its ``dagster.yaml`` puts its storage there
(``storage: postgres``, docs/how-to/team.md: every machine of a team shares it), else a SQLite
file beside the instance (``$DAGSTER_HOME/split_assets_looks.db``). ``held`` is the
instance-level lock (``BEGIN IMMEDIATE``; on PostgreSQL an advisory transaction lock) under
which a look is checked against the budget and recorded, so two imports at once cannot both
take the last look."""

from __future__ import annotations

import json
import os
import re
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import yaml

from split_assets.errors import UserError
from split_assets.store.conventions import utc_now
from split_assets.store.ledger import Exposure, FrozenRecord, Look

FILE = "split_assets_looks.db"
WAIT_S = 60.0
SCHEMA = """
CREATE TABLE IF NOT EXISTS split_assets_looks (
    baseline TEXT NOT NULL, workspace TEXT NOT NULL, split_id TEXT NOT NULL,
    run_id TEXT NOT NULL, answers_digest TEXT NOT NULL, source TEXT NOT NULL,
    statistic TEXT NOT NULL, shown TEXT NOT NULL, created_at TEXT NOT NULL,
    PRIMARY KEY (baseline, workspace, split_id, answers_digest));
CREATE TABLE IF NOT EXISTS split_assets_exposures (
    baseline TEXT NOT NULL, workspace TEXT NOT NULL, pools_sha256 TEXT NOT NULL,
    split_id TEXT NOT NULL, answers_digest TEXT NOT NULL, run_id TEXT NOT NULL,
    question_ids TEXT NOT NULL,
    PRIMARY KEY (baseline, workspace, pools_sha256, answers_digest));
CREATE TABLE IF NOT EXISTS split_assets_frozen (
    baseline TEXT NOT NULL, workspace TEXT NOT NULL, baseline_run_id TEXT NOT NULL,
    diag_fingerprint TEXT NOT NULL, split_id TEXT NOT NULL, pools_sha256 TEXT NOT NULL,
    pools TEXT NOT NULL,
    PRIMARY KEY (baseline, workspace, diag_fingerprint, split_id, pools_sha256));
CREATE TABLE IF NOT EXISTS split_assets_budgets (
    baseline TEXT NOT NULL, workspace TEXT NOT NULL, test_looks_max INTEGER,
    updated_at TEXT NOT NULL, PRIMARY KEY (baseline, workspace));
"""
LOOK_COLUMNS = ("split_id", "run_id", "answers_digest", "source", "statistic", "shown",
                "created_at")


@dataclass
class Published:
    """What workspaces published for one baseline (``workspace`` beside each row)."""

    looks: list[tuple[str, Look]] = field(default_factory=list)
    exposures: list[tuple[str, Exposure]] = field(default_factory=list)
    frozen: list[tuple[str, FrozenRecord]] = field(default_factory=list)
    budgets: dict[str, int | None] = field(default_factory=dict)


class InstanceLedger:
    """The shared record of the instance in ``folder`` (its ``DAGSTER_HOME``)."""

    def __init__(self, folder: Path, create: bool = True) -> None:
        """``create``: make the tables where they are missing (False: a reader, which
        finds nothing published when they are)."""
        self.url = instance_postgres_url(folder)
        self.empty = False
        if self.url is not None:
            import psycopg

            self.where = _shown(self.url)
            try:
                self._conn: Any = psycopg.connect(self.url, connect_timeout=10)
            except psycopg.Error as exc:
                raise UserError(f"the Dagster instance's database {self.where} is unreachable "
                                f"({str(exc).strip().splitlines()[0]}): the test looks of "
                                "its workspaces are kept there", "DAGSTER_HOME/dagster.yaml",
                                "start the database, or check DAGSTER_POSTGRES_URL") from None
            if not create:
                self.empty = self._x("SELECT to_regclass('split_assets_budgets')"
                                     ).fetchone()[0] is None
                self._conn.rollback()
                return
            with self._conn.transaction():
                self._conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK,))
                for statement in SCHEMA.split(";"):
                    if statement.strip():
                        self._conn.execute(statement)
            return
        if not create and not (folder / FILE).is_file():
            self.empty, self.where = True, str(folder / FILE)
            return
        folder.mkdir(parents=True, exist_ok=True)
        self.where = str(folder / FILE)
        self._conn = sqlite3.connect(folder / FILE, timeout=WAIT_S, isolation_level=None)
        self._conn.executescript(SCHEMA)

    def close(self) -> None:
        if hasattr(self, "_conn"):
            self._conn.close()

    def _x(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self._conn.execute(sql.replace("?", "%s") if self.url else sql, tuple(params))

    @contextmanager
    def held(self) -> Iterator[InstanceLedger]:
        """The instance-level lock until the block ends: committed, or rolled back."""
        if self.url is not None:
            with self._conn.transaction():
                self._x("SELECT pg_advisory_xact_lock(?)", (_LOCK,))
                yield self
            return
        self._x("BEGIN IMMEDIATE")
        try:
            yield self
        except BaseException:
            self._x("ROLLBACK")
            raise
        self._x("COMMIT")

    def read(self, baseline: str) -> Published:
        """Every workspace's rows for ``baseline``."""
        out = Published()
        if self.empty:
            return out
        args = (baseline,)
        for row in self._x(f"SELECT workspace, {', '.join(LOOK_COLUMNS)} FROM "
                           f"split_assets_looks WHERE baseline = ? ORDER BY created_at",
                           args).fetchall():
            out.looks.append((row[0], Look(row[1], "test", row[2], row[3], row[4],
                                           json.loads(row[5]), row[6], False, row[7])))
        for row in self._x("SELECT workspace, pools_sha256, split_id, answers_digest, run_id, "
                           "question_ids FROM split_assets_exposures WHERE baseline = ?",
                           args).fetchall():
            out.exposures.append((row[0], Exposure(baseline, row[1], row[2], row[3], row[4],
                                                   tuple(json.loads(row[5])))))
        for row in self._x("SELECT workspace, baseline_run_id, diag_fingerprint, split_id, "
                           "pools_sha256, pools FROM split_assets_frozen WHERE baseline = ?",
                           args).fetchall():
            out.frozen.append((row[0], FrozenRecord(baseline, *row[1:])))
        for workspace, budget in self._x("SELECT workspace, test_looks_max FROM "
                                         "split_assets_budgets WHERE baseline = ?",
                                         args).fetchall():
            out.budgets[workspace] = budget
        return out

    def publish(self, baseline: str, workspace: str, budget: int | None, looks: Sequence[Look],
                exposures: Sequence[Exposure], frozen: Sequence[FrozenRecord]) -> None:
        """A workspace's own rows for ``baseline`` (idempotent) and its declared budget."""
        for look in looks:
            self._x(f"INSERT INTO split_assets_looks (baseline, workspace, "
                    f"{', '.join(LOOK_COLUMNS)}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
                    "ON CONFLICT DO NOTHING",
                    (baseline, workspace, look.split_id, look.run_id, look.answers_digest,
                     look.source, json.dumps(look.statistic, sort_keys=True), look.shown,
                     look.created_at))
        for e in exposures:
            self._x("INSERT INTO split_assets_exposures VALUES (?, ?, ?, ?, ?, ?, ?) "
                    "ON CONFLICT DO NOTHING",
                    (baseline, workspace, e.pools_sha256, e.split_id, e.answers_digest,
                     e.run_id, json.dumps(sorted(e.question_ids))))
        for f in frozen:
            self._x("INSERT INTO split_assets_frozen VALUES (?, ?, ?, ?, ?, ?, ?) "
                    "ON CONFLICT DO NOTHING",
                    (baseline, workspace, f.baseline_run_id, f.diag_fingerprint, f.split_id,
                     f.pools_sha256, f.pools))
        self._x("INSERT INTO split_assets_budgets VALUES (?, ?, ?, ?) ON CONFLICT (baseline, "
                "workspace) DO UPDATE SET test_looks_max = excluded.test_looks_max, "
                "updated_at = excluded.updated_at", (baseline, workspace, budget, utc_now()))


def _shown(url: str) -> str:
    """The URL without its user and password (for messages)."""
    parts = urlsplit(url)
    return parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl()


_LOCK = 0x5A17_B0D6  # pg_advisory_xact_lock key of the shared looks


def instance_postgres_url(folder: Path) -> str | None:
    """The PostgreSQL URL of the instance's storage as its ``dagster.yaml`` names it
    (``storage: postgres: postgres_url`` or ``postgres_db``, a value or ``env: NAME``); None
    when the instance keeps its storage in SQLite files."""
    try:
        doc = yaml.safe_load((folder / "dagster.yaml").read_text(encoding="utf-8")) or {}
        pg = doc["storage"]["postgres"]
    except (OSError, yaml.YAMLError, KeyError, TypeError):
        return None

    def value(v: Any) -> str | None:
        return os.environ.get(v["env"]) if isinstance(v, dict) and "env" in v else (
            None if v is None else str(v))

    if not isinstance(pg, dict):
        return None
    url = value(pg.get("postgres_url"))
    if url is None and isinstance(pg.get("postgres_db"), dict):
        db = {k: value(v) for k, v in pg["postgres_db"].items()}
        auth = quote(db.get("username") or "", safe="") + (
            f":{quote(db['password'], safe='')}" if db.get("password") else "")
        url = (f"postgresql://{auth}@{db.get('hostname')}:{db.get('port') or 5432}/"
               f"{db.get('db_name')}")
    return re.sub(r"^postgres(?:ql)?\+\w+://", "postgresql://", url) if url else None
