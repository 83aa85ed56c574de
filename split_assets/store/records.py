"""What the signal store keeps beside the diagnoses: the judge's response cache, the
components each fingerprint stands for, and human review labels (``Records``, a part of
``SignalStore``)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, ClassVar

from split_assets.lib.redact import environment_redactor
from split_assets.store.conventions import utc_now
from split_assets.store.tables import upsert_sql

_CACHE_PUT = upsert_sql("llm_cache", ("key", "response", "created_at"), ("key",))
LABEL_COLUMNS = ("baseline_run_id", "question_id", "reviewer", "video_id", "task_type", "tier",
                 "error_type", "sampling_weight", "stratum", "notes", "imported_at")
_PUT_LABELS = upsert_sql("review_labels", LABEL_COLUMNS,
                         ("baseline_run_id", "question_id", "reviewer"))


class Records:
    """The cache, fingerprint and review-label operations of ``SignalStore``."""

    _OLD_STORE: ClassVar[tuple[type[Exception], ...]]

    def _x(self, sql: str, params: Iterable[Any] = ()) -> Any:
        raise NotImplementedError

    def _xm(self, sql: str, rows: Iterable[Iterable[Any]]) -> int:
        raise NotImplementedError

    def _errors(self, doing: str) -> AbstractContextManager[None]:
        raise NotImplementedError

    def _tx(self) -> AbstractContextManager[None]:
        raise NotImplementedError

    # -- the judge's response cache: only valid responses are ever put here ----------------

    def cache_get(self, key: str) -> str | None:
        row = self._x("SELECT response FROM llm_cache WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def cache_has(self, keys: Iterable[str]) -> set[str]:
        """Which of ``keys`` the response cache holds (the dry run's estimate)."""
        keys = list(keys)
        found: set[str] = set()
        for start in range(0, len(keys), 500):
            chunk = keys[start:start + 500]
            found.update(r[0] for r in self._x(
                f"SELECT key FROM llm_cache WHERE key IN ({', '.join('?' for _ in chunk)})",
                chunk))
        return found

    def cache_put(self, key: str, response: str) -> None:
        """Written in the open transaction: committed together with the diagnosis row that
        uses it (``upsert``) or by ``flush``, so a crash never keeps one without the other."""
        self._x(_CACHE_PUT, (key, environment_redactor()(response), utc_now()))

    def record_fingerprint(self, key: str, components: dict[str, Any]) -> None:
        """Keep what a fingerprint stands for (its judge's components), once."""
        with self._errors("write"), self._tx():
            self._x("INSERT INTO fingerprints (diag_fingerprint, components, recorded_at) "
                    "VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                    (key, json.dumps(components, sort_keys=True), utc_now()))

    def fingerprint_components(self, key: str) -> dict[str, Any] | None:
        """The components recorded for ``key`` (None: never diagnosed with this store)."""
        with self._errors("read"):
            try:
                row = self._x("SELECT components FROM fingerprints WHERE diag_fingerprint = ?",
                              (key,)).fetchone()
            except self._OLD_STORE:  # a store of an earlier release, opened read-only
                return None
        return json.loads(row[0]) if row else None

    # -- human review labels (keyed by run, question and reviewer: not by fingerprint, so they
    # outlive a change of judge) ------------------------------------------------------------

    def put_review_labels(self, labels: list[ReviewLabel]) -> None:
        """Upsert labels in one transaction (all or nothing; importing again replaces)."""
        with self._errors("write"), self._tx():
            self._xm(
                _PUT_LABELS,
                [(x.baseline_run_id, x.question_id, x.reviewer, x.video_id, x.task_type, x.tier,
                  x.error_type, x.sampling_weight, x.stratum, x.notes, utc_now())
                 for x in labels])

    def review_labels(self, baseline_run_id: str) -> list[ReviewLabel]:
        with self._errors("read"):
            try:
                rows = self._x(
                    "SELECT baseline_run_id, question_id, reviewer, video_id, task_type, tier, "
                    "error_type, sampling_weight, stratum, notes FROM review_labels WHERE "
                    "baseline_run_id = ? ORDER BY question_id, reviewer", (baseline_run_id,))
                return [ReviewLabel(*r) for r in rows]
            except self._OLD_STORE:  # a store of an earlier release, read-only
                return []


@dataclass(frozen=True, slots=True)
class ReviewLabel:
    """A human reviewer's verdict on one wrong answer of a baseline run."""

    baseline_run_id: str
    question_id: str
    reviewer: str
    video_id: str
    task_type: str
    tier: str
    error_type: str | None
    sampling_weight: float
    stratum: str = ""
    notes: str = ""

