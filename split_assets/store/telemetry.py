"""Per-call telemetry in the signal store (its ``llm_calls`` table): what the endpoint
reported, call statuses and latencies, for the diagnosis asset's metadata."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from split_assets.lib.redact import environment_redactor
from split_assets.store.conventions import utc_now

CALL_COLUMNS = ("diag_fingerprint", "question_id", "attempt", "status", "latency_ms",
                "prompt_tokens", "completion_tokens", "cache_hit", "reported_model", "created_at",
                "cached_tokens", "concurrency")
_RECORD_CALL = (f"INSERT INTO llm_calls ({', '.join(CALL_COLUMNS)}) VALUES "
                f"({', '.join('?' for _ in CALL_COLUMNS)})")


class Telemetry:
    """The telemetry operations of ``SignalStore``."""

    def _x(self, sql: str, params: Iterable[Any] = ()) -> Any:
        raise NotImplementedError

    def record_call(self, fingerprint: str, question_id: str, attempt: int, status: str,
                    latency_ms: float, prompt_tokens: int = 0, completion_tokens: int = 0,
                    cache_hit: bool = False, reported_model: str | None = None,
                    cached_tokens: int = 0, concurrency: int = 0) -> None:
        """One telemetry row, committed with the next diagnosis row or ``flush`` (one commit
        per finished diagnosis instead of three). Statuses: ``ok``, ``invalid_output`` (an
        HTTP 200 whose answer is not a valid diagnosis), ``cache_hit`` (no call, no tokens
        spent), an HTTP status, ``timeout``, ``connection_error``, ... ``concurrency``: the
        requests the judge allowed in flight when it was sent. The status and the
        reported model are redacted of any configured credential (the signal store's net)."""
        redact = environment_redactor()
        self._x(
            _RECORD_CALL,
            (fingerprint, question_id, attempt, redact(status), latency_ms, prompt_tokens,
             completion_tokens, int(cache_hit), redact.optional(reported_model), utc_now(),
             cached_tokens, concurrency))

    def prompt_rates(self, fingerprint: str, last: int = 64) -> list[float]:
        """Uncached prompt tokens per second of the fingerprint's last answered calls (the
        judge's time budget of a cold first call: judge/budget.py)."""
        rows = self._x("SELECT prompt_tokens - cached_tokens, latency_ms FROM llm_calls WHERE "
                       "diag_fingerprint = ? AND status = 'ok' AND latency_ms > 0 AND "
                       "prompt_tokens > cached_tokens ORDER BY rowid DESC LIMIT ?",
                       (fingerprint, last)).fetchall()
        return [1000.0 * tokens / latency for tokens, latency in reversed(rows)]

    def learned_concurrency(self, fingerprint: str) -> int | None:
        """The limit the fingerprint's last answered call was sent under: where the judge's
        last run ended, and where its next starts (judge/concurrency.py)."""
        row = self._x("SELECT concurrency FROM llm_calls WHERE diag_fingerprint = ? AND "
                      "status IN ('ok', 'invalid_output') AND concurrency > 0 "
                      "ORDER BY rowid DESC LIMIT 1", (fingerprint,)).fetchone()
        return int(row[0]) if row else None

    def telemetry(self, fingerprint: str) -> dict[str, Any]:
        """The endpoint's reported models, call statuses and latency by status."""
        return {"models": self.reported_models(fingerprint),
                "call_statuses": self.call_statuses(fingerprint),
                "latency": self.latency_by_status(fingerprint)}

    def reported_models(self, fingerprint: str) -> list[str]:
        """Models the endpoint reported for a fingerprint, first seen first."""
        rows = self._x(
            "SELECT reported_model, MIN(rowid) FROM llm_calls WHERE diag_fingerprint = ? AND "
            "reported_model IS NOT NULL GROUP BY reported_model ORDER BY 2", (fingerprint,))
        return [r[0] for r in rows]

    def call_statuses(self, fingerprint: str) -> dict[str, int]:
        rows = self._x("SELECT status, COUNT(*) FROM llm_calls WHERE diag_fingerprint = ? "
                       "GROUP BY status ORDER BY status", (fingerprint,))
        return {r[0]: int(r[1]) for r in rows}

    def latency_by_status(self, fingerprint: str) -> dict[str, dict[str, float]]:
        """p50 / p95 latency (ms) and count per call status (cache hits left out), timeouts
        and failures included: a hung request held its slot for that long."""
        by_status: dict[str, list[float]] = {}
        for status, latency in self._x(
                "SELECT status, latency_ms FROM llm_calls WHERE diag_fingerprint = ? AND "
                "cache_hit = 0 ORDER BY latency_ms", (fingerprint,)):
            by_status.setdefault(status, []).append(float(latency))
        return {status: {"n": len(lat), "p50_ms": round(_quantile(lat, 0.5), 1),
                         "p95_ms": round(_quantile(lat, 0.95), 1)}
                for status, lat in sorted(by_status.items())}


def _quantile(sorted_values: list[float], q: float) -> float:
    """Nearest-rank quantile of sorted values."""
    if not sorted_values:
        return 0.0
    return sorted_values[min(len(sorted_values) - 1, max(0, int(q * len(sorted_values) + 0.5) - 1))]
