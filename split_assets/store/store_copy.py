"""``split-assets signals copy --to URL``: every table of one signal store into another
(SQLite into PostgreSQL), in chunks, keeping what the target has."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from split_assets.errors import UserError
from split_assets.lib.redact import environment_redactor
from split_assets.store.ledger import copy_ledger
from split_assets.store.signals import (
    LABEL_COLUMNS,
    ROW_COLUMNS,
    ROW_KEY,
    SignalStore,
)
from split_assets.store.telemetry import CALL_COLUMNS

if TYPE_CHECKING:
    pass



@dataclass
class CopySummary:
    """What a copy moved (rows the target already had are kept as they are)."""

    signals: int = 0
    signals_kept: int = 0
    cache: int = 0
    calls: int = 0
    calls_skipped_fingerprints: int = 0
    fingerprints: int = 0
    review_labels: int = 0
    looks: int = 0

    def line(self, target: str) -> str:
        text = (f"copied {self.signals} signal row(s), {self.cache} cached response(s), "
                f"{self.calls} call record(s), {self.fingerprints} fingerprint(s), "
                f"{self.review_labels} review label(s) and {self.looks} ledger row(s) into "
                f"{target}")
        if self.signals_kept:
            text += f"; kept {self.signals_kept} row(s) the target already had"
        if self.calls_skipped_fingerprints:
            text += (f"; call records of {self.calls_skipped_fingerprints} fingerprint(s) were "
                     "there already")
        return text


_CHUNK = 2000
_SIGNAL_COLUMNS = (*ROW_COLUMNS, "updated_at")


def copy_store(source: SignalStore, target: SignalStore) -> CopySummary:
    """Copy every diagnosis, cached response, call record, fingerprint and review label of
    ``source`` into ``target`` in one transaction (all or nothing). Copying again adds nothing.
    Refused while a run holds leases in ``source``."""
    with source._errors("read"):
        live = source._x("SELECT COUNT(*) FROM leases WHERE expires_at > ? AND owner <> ''",
                         (source.now(),)).fetchone()[0]
    if live:
        raise UserError(f"a run is diagnosing with the source store ({live} question(s) "
                        f"leased)", source.location,
                        "wait for it to finish, then copy (leases expire a minute after a "
                        "worker dies)")
    summary = CopySummary()
    with source._errors("read"), target._errors("copy into"), target._tx():
        summary.signals = _copy(source, target, "signals", _SIGNAL_COLUMNS, "ON CONFLICT "
                                f"({', '.join(ROW_KEY)}) DO NOTHING")
        summary.signals_kept = source.count() - summary.signals
        summary.cache = _copy(source, target, "llm_cache", ("key", "response", "created_at"),
                              "ON CONFLICT (key) DO NOTHING")
        summary.fingerprints = _copy(source, target, "fingerprints",
                                     ("diag_fingerprint", "components", "recorded_at"),
                                     "ON CONFLICT DO NOTHING")
        there = {r[0] for r in target._x("SELECT DISTINCT diag_fingerprint FROM llm_calls")}
        fps = [r[0] for r in source._x("SELECT diag_fingerprint, MIN(rowid) FROM llm_calls "
                                       "GROUP BY diag_fingerprint ORDER BY 2")]
        summary.calls_skipped_fingerprints = sum(fp in there for fp in fps)
        for fp in (fp for fp in fps if fp not in there):  # in the order they were made
            summary.calls += _copy(source, target, "llm_calls", CALL_COLUMNS, "",
                                   "WHERE diag_fingerprint = ? ORDER BY rowid", (fp,))
        summary.review_labels = _copy(source, target, "review_labels", LABEL_COLUMNS,
                                      "ON CONFLICT DO NOTHING")
        summary.looks = copy_ledger(source, target)
    return summary


def _copy(source: SignalStore, target: SignalStore, table: str, columns: tuple[str, ...],
          conflict: str, where: str = "", params: Iterable[Any] = ()) -> int:
    """Insert ``table``'s rows of ``source`` into ``target``; the rows inserted."""
    insert = (f"INSERT INTO {table} ({', '.join(columns)}) VALUES "
              f"({', '.join('?' for _ in columns)}) {conflict}")
    cursor = source._x(f"SELECT {', '.join(columns)} FROM {table} {where}", params)
    copied = 0
    redact = environment_redactor()  # a store of an earlier release may hold a secret
    while chunk := cursor.fetchmany(_CHUNK):
        copied += target._xm(insert, [redact.value(tuple(row)) for row in chunk] if redact
                             else chunk)
    return copied

