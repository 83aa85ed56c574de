"""The test looks of every workspace on one Dagster instance (issue 46): a test budget belongs
to the benchmark and the baseline, so a second workspace made from the same baseline file must
not start a fresh one. Each workspace publishes its own test looks (with the questions they
showed), its frozen splits and its declared ``evaluation.test_looks_max`` here, keyed by the
digest of the baseline's answers; each reads the others' before a look or a freeze
(``evaluation/shared_budget.py``).

The file is SQLite beside the instance (``$DAGSTER_HOME/split_assets_looks.db``), whatever the
instance's own storage is; ``held`` is the instance-level lock (``BEGIN IMMEDIATE``) under
which a look is checked against the budget and recorded, so two imports at once cannot both
take the last look."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from split_assets.store.conventions import utc_now
from split_assets.store.ledger import Exposure, FrozenRecord, Look

FILE = "split_assets_looks.db"
WAIT_S = 60.0
SCHEMA = """
CREATE TABLE IF NOT EXISTS looks (
    baseline TEXT NOT NULL, workspace TEXT NOT NULL, split_id TEXT NOT NULL,
    run_id TEXT NOT NULL, answers_digest TEXT NOT NULL, source TEXT NOT NULL,
    statistic TEXT NOT NULL, shown TEXT NOT NULL, created_at TEXT NOT NULL,
    PRIMARY KEY (baseline, workspace, split_id, answers_digest));
CREATE TABLE IF NOT EXISTS exposures (
    baseline TEXT NOT NULL, workspace TEXT NOT NULL, pools_sha256 TEXT NOT NULL,
    split_id TEXT NOT NULL, answers_digest TEXT NOT NULL, run_id TEXT NOT NULL,
    question_ids TEXT NOT NULL,
    PRIMARY KEY (baseline, workspace, pools_sha256, answers_digest));
CREATE TABLE IF NOT EXISTS frozen (
    baseline TEXT NOT NULL, workspace TEXT NOT NULL, baseline_run_id TEXT NOT NULL,
    diag_fingerprint TEXT NOT NULL, split_id TEXT NOT NULL, pools_sha256 TEXT NOT NULL,
    pools TEXT NOT NULL,
    PRIMARY KEY (baseline, workspace, diag_fingerprint, split_id, pools_sha256));
CREATE TABLE IF NOT EXISTS budgets (
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
    """The shared record in ``folder`` (the Dagster instance's folder)."""

    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / FILE
        self._conn = sqlite3.connect(self.path, timeout=WAIT_S, isolation_level=None)
        self._conn.executescript(SCHEMA)

    def close(self) -> None:
        self._conn.close()

    @contextmanager
    def held(self) -> Iterator[InstanceLedger]:
        """The instance-level lock until the block ends: committed, or rolled back."""
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            yield self
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")

    def read(self, baseline: str, but: str | None = None) -> Published:
        """Every workspace's rows for ``baseline`` (``but``: leave that workspace's out)."""
        out = Published()
        skip = "" if but is None else " AND workspace != ?"
        args = (baseline,) if but is None else (baseline, but)
        for row in self._conn.execute(f"SELECT workspace, {', '.join(LOOK_COLUMNS)} FROM looks "
                                      f"WHERE baseline = ?{skip} ORDER BY created_at", args):
            out.looks.append((row[0], Look(row[1], "test", row[2], row[3], row[4],
                                           json.loads(row[5]), row[6], False, row[7])))
        for row in self._conn.execute(
                "SELECT workspace, pools_sha256, split_id, answers_digest, run_id, question_ids "
                f"FROM exposures WHERE baseline = ?{skip}", args):
            out.exposures.append((row[0], Exposure(baseline, row[1], row[2], row[3], row[4],
                                                   tuple(json.loads(row[5])))))
        for row in self._conn.execute(
                "SELECT workspace, baseline_run_id, diag_fingerprint, split_id, pools_sha256, "
                f"pools FROM frozen WHERE baseline = ?{skip}", args):
            out.frozen.append((row[0], FrozenRecord(baseline, *row[1:])))
        for workspace, budget in self._conn.execute(
                f"SELECT workspace, test_looks_max FROM budgets WHERE baseline = ?{skip}", args):
            out.budgets[workspace] = budget
        return out

    def publish(self, baseline: str, workspace: str, budget: int | None, looks: Sequence[Look],
                exposures: Sequence[Exposure], frozen: Sequence[FrozenRecord]) -> None:
        """A workspace's own rows for ``baseline`` (idempotent) and its declared budget."""
        x = self._conn.execute
        for look in looks:
            x(f"INSERT OR IGNORE INTO looks (baseline, workspace, {', '.join(LOOK_COLUMNS)}) "
              "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
              (baseline, workspace, look.split_id, look.run_id, look.answers_digest,
               look.source, json.dumps(look.statistic, sort_keys=True), look.shown,
               look.created_at))
        for e in exposures:
            x("INSERT OR IGNORE INTO exposures VALUES (?, ?, ?, ?, ?, ?, ?)",
              (baseline, workspace, e.pools_sha256, e.split_id, e.answers_digest, e.run_id,
               json.dumps(sorted(e.question_ids))))
        for f in frozen:
            x("INSERT OR IGNORE INTO frozen VALUES (?, ?, ?, ?, ?, ?, ?)",
              (baseline, workspace, f.baseline_run_id, f.diag_fingerprint, f.split_id,
               f.pools_sha256, f.pools))
        x("INSERT INTO budgets VALUES (?, ?, ?, ?) ON CONFLICT (baseline, workspace) DO UPDATE "
          "SET test_looks_max = excluded.test_looks_max, updated_at = excluded.updated_at",
          (baseline, workspace, budget, utc_now()))
