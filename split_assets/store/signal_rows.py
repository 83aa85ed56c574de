"""The signal store's own rows (its ``signals`` table): ``SignalRow``, one diagnosis (or T0
INFRA record) of a wrong answer, keyed by (question_id, baseline_run_id, diag_fingerprint) and
upserted, so writing the same row twice changes nothing; and ``SignalRows``, their operations
in ``SignalStore`` (whose backends supply the hooks)."""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass, fields
from operator import attrgetter
from typing import Any

from split_assets.lib.redact import environment_redactor
from split_assets.store.conventions import DONE, utc_now
from split_assets.store.leases import LeaseOwner


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


ROW_COLUMNS = [f.name for f in fields(SignalRow)]
ROW_KEY = ("question_id", "baseline_run_id", "diag_fingerprint")
# created_at keeps the first write: re-upserting an identical row changes no byte of it.
_UPDATE = ", ".join(f"{c} = excluded.{c}" for c in ROW_COLUMNS
                    if c not in ROW_KEY + ("created_at",))
# updated_at (epoch seconds, not part of SignalRow) tells a pass which degraded rows another
# run has retried since: a degraded question is retried once, not once per concurrent run
# (an identical row written again changes nothing, not even updated_at)
_CHANGED = " OR ".join(f"signals.{c} IS NOT excluded.{c}" for c in ROW_COLUMNS
                       if c not in ROW_KEY + ("created_at",))
_UPSERT = (f"INSERT INTO signals ({', '.join(ROW_COLUMNS)}, updated_at) VALUES "
           f"({', '.join('?' for _ in ROW_COLUMNS)}, ?) ON CONFLICT ({', '.join(ROW_KEY)}) "
           f"DO UPDATE SET {_UPDATE}, updated_at = excluded.updated_at WHERE {_CHANGED}")


_READ = attrgetter(*ROW_COLUMNS)
# the free text of a row, which an endpoint's answer may fill (redacted on the way in)
_TEXT = tuple(ROW_COLUMNS.index(c) for c in ("error_type", "cause_category", "evolution_target",
                                          "session_id", "rationale", "reported_model"))
_CREATED, _DEGRADED, _INFRA = (ROW_COLUMNS.index(c) for c in ("created_at", "degraded", "infra"))


class SignalRows:
    """The row operations of ``SignalStore``."""

    def now(self) -> float:
        raise NotImplementedError

    def _errors(self, doing: str) -> AbstractContextManager[None]:
        raise NotImplementedError

    def _tx(self) -> AbstractContextManager[None]:
        raise NotImplementedError

    def _x(self, sql: str, params: Iterable[Any] = ()) -> Any:
        raise NotImplementedError

    def _xm(self, sql: str, rows: Iterable[Iterable[Any]]) -> int:
        raise NotImplementedError

    def upsert(self, row: SignalRow) -> None:
        """Insert or update one row and commit it at once."""
        self.upsert_many([row])

    def upsert_many(self, rows: Iterable[SignalRow], release: LeaseOwner | None = None) -> float:
        """Insert or update rows in one transaction (dropping ``release``'s leases on them);
        returns the ``updated_at`` they were written with."""
        values = []
        now = self.now()
        redact = environment_redactor()
        for row in rows:  # rows are flat: a shallow read, not dataclasses.asdict's deep copy
            record = list(_READ(row))
            if redact:
                for i in _TEXT:
                    record[i] = redact.optional(record[i])
            record[_CREATED] = record[_CREATED] or utc_now()
            record[_DEGRADED] = int(record[_DEGRADED])
            record[_INFRA] = int(record[_INFRA])
            record.append(now)
            values.append(record)
        with self._errors("write"), self._tx():
            self._xm(_UPSERT, values)
            if release is not None:
                self._xm(
                    "DELETE FROM leases WHERE baseline_run_id = ? AND diag_fingerprint = ? AND "
                    "question_id = ? AND owner = ?",
                    [(v[1], v[2], v[0], release.owner) for v in values])
        return now

    def rows(self, baseline_run_id: str, diag_fingerprint: str) -> list[SignalRow]:
        """Every row of a (run, fingerprint), sorted by question id."""
        with self._errors("read"):
            cursor = self._x(
                f"SELECT {', '.join(ROW_COLUMNS)} FROM signals WHERE baseline_run_id = ? AND "
                "diag_fingerprint = ? ORDER BY question_id", (baseline_run_id, diag_fingerprint))
            out = []
            for values in cursor:
                record = dict(zip(ROW_COLUMNS, values, strict=True))
                record["degraded"] = bool(record["degraded"])
                record["infra"] = bool(record["infra"])
                out.append(SignalRow(**record))
        return out

    def done_question_ids(self, baseline_run_id: str, diag_fingerprint: str) -> set[str]:
        """Questions with a finished diagnosis (``DONE``)."""
        with self._errors("read"):
            cursor = self._x(
                f"SELECT question_id FROM signals WHERE baseline_run_id = ? AND "
                f"diag_fingerprint = ? AND {DONE}", (baseline_run_id, diag_fingerprint,
                                                      float("inf")))
            return {r[0] for r in cursor}

    def updated_at(self, baseline_run_id: str, diag_fingerprint: str,
                   question_ids: Iterable[str]) -> dict[str, float]:
        """When each of these questions' rows was last written."""
        wanted = set(question_ids)
        with self._errors("read"):
            return {q: float(t) for q, t in self._x(
                "SELECT question_id, updated_at FROM signals WHERE baseline_run_id = ? AND "
                "diag_fingerprint = ?", (baseline_run_id, diag_fingerprint)) if q in wanted}

    def delete_run(self, baseline_run_id: str) -> int:
        """Delete every signal row and lease of a run (re-imported answers); returns the rows."""
        with self._errors("write"), self._tx():
            gone = self._x("DELETE FROM signals WHERE baseline_run_id = ?",
                           (baseline_run_id,)).rowcount
            self._x("DELETE FROM leases WHERE baseline_run_id = ?", (baseline_run_id,))
        return int(gone)
