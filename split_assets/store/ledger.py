"""The evaluation ledger (``Ledger``, a part of ``SignalStore``): one row each time a run's
answers on a frozen pool were evaluated and something was shown (``split-assets compare``;
issue 24 adds the candidate_evaluation asset and ``feedback``). A row whose answers on that
pool were evaluated before (the same answers digest, whatever the run is called) is marked a
repeat: the same hypothesis seen again, never a new one."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from dataclasses import asdict, dataclass
from typing import Any, ClassVar

from split_assets.store.conventions import utc_now

COLUMNS = ("split_id", "pool", "run_id", "answers_digest", "source", "statistic", "shown",
           "is_repeat", "created_at")
EXPOSURE_COLUMNS = ("baseline", "pools_sha256", "split_id", "answers_digest", "run_id",
                    "question_ids", "created_at")
# what every row recorded inside ``tagged`` carries in its statistic
_TAG: ContextVar[tuple[tuple[str, Any], ...]] = ContextVar("split_assets_ledger_tag", default=())


@contextmanager
def tagged(**tag: Any) -> Iterator[None]:
    """Every ledger row recorded inside the block (by this thread or task) carries ``tag`` in
    its statistic: an optimizer's loop names itself and its program (``split_assets.loops``)."""
    token = _TAG.set(tuple({**dict(_TAG.get()), **tag}.items()))
    try:
        yield
    finally:
        _TAG.reset(token)


FROZEN_COLUMNS = ("baseline", "baseline_run_id", "diag_fingerprint", "split_id", "pools_sha256",
                  "pools", "frozen_at")


class LookRefused(Exception):
    """A new look at a pool whose budget of distinct answers is spent (nothing was written)."""

    def __init__(self, pool: str, looks: int, budget: int) -> None:
        super().__init__(f"{looks} look(s) at {pool}, budget {budget}")
        self.pool, self.looks, self.budget = pool, looks, budget


@dataclass(frozen=True)
class Evaluation:
    """What a command asks the ledger to record: a run's answers on a pool, and what it showed."""

    split_id: str
    pool: str
    run_id: str
    answers_digest: str
    source: str
    statistic: dict[str, Any]
    shown: str


@dataclass(frozen=True)
class Look(Evaluation):
    """One row of the ledger: an evaluation, whether its answers were seen on the pool
    before, and when."""

    is_repeat: bool
    created_at: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Exposure:
    """Which test questions a look showed (``test_exposure``). A budget belongs to the
    benchmark and the baseline, so ``baseline`` is the digest of the baseline's answers (the
    manifest's ``input_digests.baseline_predictions``: the same baseline under any run id),
    and a later split of it finds every look at the questions it puts in test, whichever split
    (``pools_sha256``) it was made on."""

    baseline: str
    pools_sha256: str
    split_id: str
    answers_digest: str
    run_id: str
    question_ids: tuple[str, ...]


@dataclass(frozen=True)
class FrozenRecord:
    """A split as frozen (``frozen_splits``): the import gate knows it even when its folder was
    moved away or ``paths.out_dir`` changed."""

    baseline: str
    baseline_run_id: str
    diag_fingerprint: str
    split_id: str
    pools_sha256: str
    pools: str  # the pools.json text


EXPOSURE_VERSION = 7  # the schema that has test_exposure and frozen_splits


class Ledger:
    """The ledger operations of ``SignalStore``."""

    _OLD_STORE: ClassVar[tuple[type[Exception], ...]]
    _conn: Any

    @property
    def schema_version(self) -> int:
        raise NotImplementedError

    def _x(self, sql: str, params: Iterable[Any] = ()) -> Any:
        raise NotImplementedError

    def _tx(self) -> AbstractContextManager[None]:
        raise NotImplementedError

    def _lock_ledger(self) -> None:
        """Hold the ledger until the transaction ends (SQLite: the database, BEGIN IMMEDIATE;
        PostgreSQL overrides it with an advisory lock)."""
        self._conn.commit()
        self._conn.execute("BEGIN IMMEDIATE")

    def record_look(self, split_id: str, pool: str, run_id: str, answers_digest: str,
                    source: str, statistic: dict[str, Any], shown: str) -> Look:
        """Append a row (a repeat when these answers were evaluated on this pool before)."""
        return self.record_looks([Evaluation(split_id, pool, run_id, answers_digest, source,
                                             statistic, shown)])[0]

    def record_looks(self, evaluations: list[Evaluation],
                     budgets: dict[str, int] | None = None,
                     exposures: Sequence[Exposure] = (),
                     inherited: Sequence[Look] = ()) -> list[Look]:
        """Append one row per evaluation in one transaction: all, or none when a new look at
        a pool with a budget (``budgets``: pool -> distinct answers allowed) would exceed it
        (``LookRefused``). ``inherited``: earlier splits' looks copied in first (they count
        against the budget); ``exposures``: the test questions the looks showed."""
        looks = []
        with self._tx():
            self._lock_ledger()
            self._inherit(inherited)
            self._record_exposures(exposures)
            for e in evaluations:
                seen = self._seen(e.split_id, e.pool, e.answers_digest)
                budget = (budgets or {}).get(e.pool)
                if not seen and budget is not None:
                    taken = self._x("SELECT COUNT(DISTINCT answers_digest) FROM evaluations "
                                    "WHERE split_id = ? AND pool = ?", (e.split_id, e.pool)
                                    ).fetchone()[0]
                    if taken >= budget:
                        raise LookRefused(e.pool, int(taken), budget)
                look = Look(e.split_id, e.pool, e.run_id, e.answers_digest, e.source,
                            {**e.statistic, **dict(_TAG.get())}, e.shown, seen, utc_now())
                self._insert(look)
                looks.append(look)
        return looks

    def _seen(self, split_id: str, pool: str, answers_digest: str) -> bool:
        return self._x("SELECT 1 FROM evaluations WHERE split_id = ? AND pool = ? AND "
                       "answers_digest = ? LIMIT 1", (split_id, pool, answers_digest)
                       ).fetchone() is not None

    def _insert(self, look: Look) -> None:
        self._x(f"INSERT INTO evaluations ({', '.join(COLUMNS)}) VALUES "
                f"({', '.join('?' for _ in COLUMNS)})",
                (look.split_id, look.pool, look.run_id, look.answers_digest, look.source,
                 json.dumps(look.statistic, sort_keys=True), look.shown, int(look.is_repeat),
                 look.created_at))

    def _inherit(self, looks: Sequence[Look]) -> int:
        """The rows of ``looks`` the ledger lacks (the same answers on the same split's pool
        are one look); the rows added."""
        added = 0
        for look in looks:
            if not self._seen(look.split_id, look.pool, look.answers_digest):
                self._insert(look)
                added += 1
        return added

    def _record_exposures(self, exposures: Sequence[Exposure]) -> None:
        now = utc_now()
        for x in exposures:
            self._x(f"INSERT INTO test_exposure ({', '.join(EXPOSURE_COLUMNS)}) VALUES "
                    f"({', '.join('?' for _ in EXPOSURE_COLUMNS)}) ON CONFLICT DO NOTHING",
                    (x.baseline, x.pools_sha256, x.split_id, x.answers_digest, x.run_id,
                     json.dumps(sorted(x.question_ids)), now))

    def _has_exposure_tables(self) -> bool:  # not in an earlier release's store, read-only
        return self.schema_version >= EXPOSURE_VERSION

    def exposures(self, baseline: str) -> list[Exposure]:
        """Every test look at a split of the baseline whose answers digest is ``baseline``,
        oldest first (empty for a store of an earlier release opened read-only)."""
        if not self._has_exposure_tables():
            return []
        rows = self._x(f"SELECT {', '.join(EXPOSURE_COLUMNS[:-1])} FROM test_exposure "
                       "WHERE baseline = ? ORDER BY created_at, split_id, answers_digest",
                       (baseline,)).fetchall()
        return [Exposure(*row[:5], tuple(json.loads(row[5]))) for row in rows]

    def inherit_looks(self, looks: list[Look], exposures: list[Exposure]) -> int:
        """Copy earlier splits' test looks into a new split's ledger, with their exposures,
        in one transaction (at its freeze); the rows added."""
        with self._tx():
            self._lock_ledger()
            added = self._inherit(looks)
            self._record_exposures(exposures)
        return added

    def record_frozen(self, record: FrozenRecord) -> None:
        with self._tx():  # idempotent
            self._insert_frozen(record)

    def _insert_frozen(self, record: FrozenRecord) -> None:
        self._x(f"INSERT INTO frozen_splits ({', '.join(FROZEN_COLUMNS)}) VALUES "
                f"({', '.join('?' for _ in FROZEN_COLUMNS)}) ON CONFLICT DO NOTHING",
                (*(getattr(record, c) for c in FROZEN_COLUMNS[:-1]), utc_now()))

    def mirror(self, looks: Sequence[Look], exposures: Sequence[Exposure],
               frozen: Sequence[FrozenRecord]) -> int:
        """Other workspaces' test looks (once each), exposures and frozen splits, in one
        transaction (``evaluation/shared_budget.py``); the look rows added."""
        with self._tx():
            self._lock_ledger()
            added = self._inherit(looks)
            self._record_exposures(exposures)
            for record in frozen:
                self._insert_frozen(record)
        return added

    def frozen(self, baseline: str) -> list[FrozenRecord]:
        """The splits of the baseline whose answers digest is ``baseline``, oldest first."""
        if not self._has_exposure_tables():
            return []
        rows = self._x(f"SELECT {', '.join(FROZEN_COLUMNS[:-1])} FROM frozen_splits WHERE "
                       "baseline = ? ORDER BY frozen_at, split_id", (baseline,)).fetchall()
        return [FrozenRecord(*row) for row in rows]

    def looks(self, split_id: str, pool: str | None = None) -> list[Look]:
        """The ledger of a split (one pool, or all), oldest first; empty for a store of an
        earlier release opened read-only."""
        where, params = "split_id = ?", [split_id]
        if pool is not None:
            where, params = where + " AND pool = ?", [*params, pool]
        try:
            rows = self._x(f"SELECT {', '.join(COLUMNS)} FROM evaluations WHERE {where} "
                           "ORDER BY rowid", params).fetchall()
        except self._OLD_STORE:
            return []
        return [Look(*row[:5], json.loads(row[5]), row[6], bool(row[7]), row[8])
                for row in rows]


def copy_ledger(source: Ledger, target: Ledger) -> int:
    """The ledger's rows the target lacks (the same row copied again is not a new look), in
    the order they were written, and their test exposures (``signals copy``)."""
    for table, columns in (("test_exposure", EXPOSURE_COLUMNS),
                           ("frozen_splits", FROZEN_COLUMNS)):
        for row in source._x(f"SELECT {', '.join(columns)} FROM {table}").fetchall():
            target._x(f"INSERT INTO {table} ({', '.join(columns)}) VALUES "
                      f"({', '.join('?' for _ in columns)}) ON CONFLICT DO NOTHING", row)
    same = " AND ".join(f"{c} = ?" for c in COLUMNS)
    insert = (f"INSERT INTO evaluations ({', '.join(COLUMNS)}) VALUES "
              f"({', '.join('?' for _ in COLUMNS)})")
    copied = 0
    for row in source._x(f"SELECT {', '.join(COLUMNS)} FROM evaluations ORDER BY rowid"
                         ).fetchall():
        if target._x(f"SELECT 1 FROM evaluations WHERE {same}", row).fetchone() is None:
            target._x(insert, row)
            copied += 1
    return copied
