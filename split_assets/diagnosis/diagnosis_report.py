"""What a diagnosis run did: the ``DiagnosisReport`` of a pass, the shards' reports joined
(``merge_reports``), its progress line, and the verdict that stops a run before anything is
frozen (``stop_unless_settled``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from split_assets.diagnosis.plan import plan_for
from split_assets.errors import RunFailure
from split_assets.sources.harness_db import CanonicalPrediction
from split_assets.store.signals import SignalStore

if TYPE_CHECKING:
    from split_assets.workspace.partition import Partition


@dataclass
class DiagnosisReport:
    """What one diagnosis pass did (asset metadata)."""

    total_wrong: int
    already_done: int
    diagnosed: int = 0
    degraded: int = 0
    calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    cached_tokens: int = 0  # of prompt_tokens, served from the provider's prefix cache
    completion_tokens: int = 0
    latencies_ms: list[float] = field(default_factory=list)
    wall_s: float = 0.0
    retried_degraded: int = 0  # degraded in the first pass, sent once more in the same run
    mine: set[str] = field(default_factory=set)  # diagnosed by this pass
    by_others: set[str] = field(default_factory=set)  # finished meanwhile by another run
    still_degraded: list[str] = field(default_factory=list)
    failed_now: set[str] = field(default_factory=set)
    settled_degraded: int = 0  # accepted as degraded by the frozen split: never sent again
    call_failures: list[str] = field(default_factory=list)  # no answer from the endpoint
    # the judge's concurrency limit over the run: (seconds since its pass started, limit)
    concurrency: list[tuple[float, int]] = field(default_factory=list)

    @property
    def by_other_runs(self) -> int:
        """Finished meanwhile by another run of the same partition."""
        return len(self.by_others)


def progress_line(done: int, total: int, elapsed_s: float, report: DiagnosisReport) -> str:
    rate = done / elapsed_s if elapsed_s > 0 else 0.0
    eta = (total - done) / rate if rate > 0 else 0.0
    calls_rate = report.calls / elapsed_s if elapsed_s > 0 else 0.0
    return (f"diagnosis {done}/{total} ({rate:.1f}/s, ETA {eta:.0f}s, calls {report.calls} "
            f"({calls_rate:.1f}/s), cache hits {report.cache_hits}, "
            f"tokens spent {report.prompt_tokens + report.completion_tokens})")


def merge_reports(preds: list[CanonicalPrediction], partition: Partition, store: SignalStore,
                  reports: list[DiagnosisReport]) -> DiagnosisReport:
    """One report of a run's diagnosis shards: their counts summed; what is still unanswered
    or degraded read from the store once every shard has ended."""
    if len(reports) == 1:
        return reports[0]
    first = min(reports, key=lambda r: r.already_done)  # the shard that started first
    merged = DiagnosisReport(total_wrong=first.total_wrong, already_done=first.already_done,
                             settled_degraded=first.settled_degraded)
    for r in reports:
        for name in ("diagnosed", "degraded", "calls", "cache_hits", "prompt_tokens",
                     "cached_tokens", "completion_tokens", "retried_degraded"):
            setattr(merged, name, getattr(merged, name) + getattr(r, name))
        merged.latencies_ms += r.latencies_ms
        merged.concurrency += r.concurrency
        merged.wall_s = max(merged.wall_s, r.wall_s)
    rows = {r.question_id for r in store.rows(partition.run_id, partition.key)}
    merged.call_failures = sorted({q for r in reports for q in r.call_failures if q not in rows})
    # finished by someone else, and not by another shard of this run
    merged.mine = set().union(*(r.mine for r in reports))
    merged.by_others = set().union(*(r.by_others for r in reports)) - merged.mine
    plan = plan_for(preds, partition, store)
    merged.still_degraded = sorted(degraded_ids(store, partition,
                                                {p.question_id for p in plan.wrong})
                                   - plan.settled)
    return merged


def degraded_ids(store: SignalStore, partition: Partition, among: set[str]) -> set[str]:
    """The degraded, non-INFRA diagnoses of ``partition`` among these questions."""
    return {r.question_id for r in store.rows(partition.run_id, partition.key)
            if r.degraded and not r.infra and r.question_id in among}


def stop_unless_settled(fingerprint: str, report: DiagnosisReport, allowed: int,
                        tag: str) -> None:
    """Nothing is frozen from a transient failure: an unanswered question, or more degraded
    diagnoses than ``--allow-degraded`` accepts, stops the run here (exit 1)."""
    if report.call_failures:
        gone = report.call_failures
        raise RunFailure(
            f"the endpoint gave no answer for {len(gone)} question(s) even after a second pass "
            f"(e.g. {', '.join(gone[:5])}); nothing was frozen", fingerprint,
            "check the endpoint, then run again: finished diagnoses are kept and not paid twice",
            {"unanswered": len(gone), "calls": report.calls,
             "diagnosed_now": report.diagnosed})
    if len(report.still_degraded) > allowed:
        stuck = report.still_degraded
        raise RunFailure(
            f"{len(stuck)} diagnosis(es) stayed degraded after a second pass (e.g. "
            f"{', '.join(stuck[:5])}); the split was not frozen", fingerprint,
            "materialize again to retry them (finished diagnoses are kept and not paid "
            f"twice), or accept them as not-T2 with --allow-degraded {len(stuck)} "
            f"(run tag {tag})",
            {"degraded": len(stuck), "allowed": allowed, "degraded_questions": stuck[:100],
             "calls": report.calls, "diagnosed_now": report.diagnosed})
