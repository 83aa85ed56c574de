"""The evaluation ledger (``Ledger``, a part of ``SignalStore``): one row each time a run's
answers on a frozen pool were evaluated and something was shown (``split-assets compare``;
issue 24 adds the candidate_evaluation asset and ``feedback``). A row whose answers on that
pool were evaluated before (the same answers digest, whatever the run is called) is marked a
repeat: the same hypothesis seen again, never a new one."""

from __future__ import annotations

import json
from collections.abc import Iterable
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass
from typing import Any, ClassVar

from split_assets.data.db import utc_now

COLUMNS = ("split_id", "pool", "run_id", "answers_digest", "source", "statistic", "shown",
           "is_repeat", "created_at")


@dataclass(frozen=True)
class Look:
    """One evaluation of a run on a pool: what was computed (``statistic``) and shown."""

    split_id: str
    pool: str
    run_id: str
    answers_digest: str
    source: str
    statistic: dict[str, Any]
    shown: str
    is_repeat: bool
    created_at: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class Ledger:
    """The ledger operations of ``SignalStore``."""

    _OLD_STORE: ClassVar[tuple[type[Exception], ...]]

    def _x(self, sql: str, params: Iterable[Any] = ()) -> Any:
        raise NotImplementedError

    def _tx(self) -> AbstractContextManager[None]:
        raise NotImplementedError

    def record_look(self, split_id: str, pool: str, run_id: str, answers_digest: str,
                    source: str, statistic: dict[str, Any], shown: str) -> Look:
        """Append a row (a repeat when these answers were evaluated on this pool before)."""
        with self._tx():
            seen = self._x("SELECT 1 FROM evaluations WHERE split_id = ? AND pool = ? AND "
                           "answers_digest = ? LIMIT 1", (split_id, pool, answers_digest)
                           ).fetchone() is not None
            look = Look(split_id, pool, run_id, answers_digest, source, statistic, shown, seen,
                        utc_now())
            self._x(f"INSERT INTO evaluations ({', '.join(COLUMNS)}) VALUES "
                    f"({', '.join('?' for _ in COLUMNS)})",
                    (split_id, pool, run_id, answers_digest, source,
                     json.dumps(statistic, sort_keys=True), shown, int(seen), look.created_at))
        return look

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
    the order they were written (``signals copy``)."""
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
