"""What the assets show in the Dagster UI: tables and figures rendered from the core's
results."""

from __future__ import annotations

import statistics
from collections import Counter
from typing import TYPE_CHECKING, Any

from dagster import MetadataValue

from split_assets.data.harness import CanonicalPrediction
from split_assets.data.signals import SignalRow
from split_assets.split.inputs import tier_distribution
from split_assets.split.stats import markdown_table

if TYPE_CHECKING:
    from split_assets.diagnosis.runner import DiagnosisReport
    from split_assets.workspace import Workspace


def accuracy_table(preds: list[CanonicalPrediction], attr: str) -> str:
    totals: Counter[str] = Counter()
    right: Counter[str] = Counter()
    for p in preds:
        totals[getattr(p, attr)] += 1
        right[getattr(p, attr)] += p.correct
    rows = [[k, totals[k], f"{right[k] / totals[k]:.3f}"] for k in sorted(totals)]
    return markdown_table([attr, "questions", "accuracy"], rows)


def judge_tags(ws: Workspace) -> dict[str, str]:
    """Run tags naming the partition's fingerprint and its judge's components."""
    components = ws.fingerprint.components
    tags = {"split_assets/fingerprint": ws.fingerprint.key}
    for name in ("judge", "model", "prompt_version", "context"):
        tags[f"split_assets/{name}"] = str(components[name])
    return tags


def predictions_metadata(ws: Workspace) -> dict[str, Any]:
    preds = ws.predictions
    n = len(preds)
    stops = Counter(p.stop_reason or "(none)" for p in preds)
    return {
        "n": n,
        "accuracy": MetadataValue.float(round(sum(p.correct for p in preds) / n, 6)),
        "wrong": sum(not p.correct for p in preds),
        "infra": sum(p.infra for p in preds),
        "accuracy_by_task_type": MetadataValue.md(accuracy_table(preds, "task_type")),
        "accuracy_by_difficulty": MetadataValue.md(accuracy_table(preds, "difficulty")),
        "stop_reason_counts": MetadataValue.json(dict(sorted(stops.items()))),
        "baseline_run_id": ws.run_id,
        "fingerprint": ws.fingerprint.key,
        "fingerprint_components": MetadataValue.json(ws.fingerprint.components),
    }


def judge_note(ws: Workspace) -> str:
    """What the judge saw of each answer."""
    diag = ws.loaded.config.diag
    if ws.is_stale:
        return (f"stale partition: re-frozen from the diagnoses stored under "
                f"{ws.fingerprint.key}; no judge was built")
    if diag.context == "full":
        return "full context: trace, tree and skills"
    if diag.judge == "openai":
        return "answer_only: question, options, answer and response only"
    if not diag.reference_runs:
        return ("answer_only: no reference runs, so every wrong answer is a lapse (T1); import "
                "other runs of the benchmark as reference runs to find persistent defects (T2)")
    return (f"answer_only: T2 when also wrong in >= {diag.agree_needed} of "
            f"{len(diag.reference_runs)} reference run(s)")


def diagnosis_metadata(ws: Workspace, report: DiagnosisReport, rows: list[SignalRow],
                       telemetry: dict[str, Any], allowed: int) -> dict[str, Any]:
    lat = sorted(report.latencies_ms)
    errors = Counter(r.error_type or "(none)" for r in rows)
    return {
        "judge": ws.fingerprint.components["judge"],
        "judge_note": judge_note(ws),
        "fingerprint_components": MetadataValue.json(ws.fingerprint.components),
        "wrong_non_infra": report.total_wrong,
        "already_done": report.already_done,
        "diagnosed_now": report.diagnosed,
        "degraded": sum(r.degraded for r in rows),
        "tier_distribution": MetadataValue.json(tier_distribution(rows)),
        "error_type_distribution": MetadataValue.json(dict(sorted(errors.items()))),
        "calls": report.calls,
        "cache_hits": report.cache_hits,
        "prompt_tokens": report.prompt_tokens,
        "completion_tokens": report.completion_tokens,
        "latency_p50_ms": MetadataValue.float(round(statistics.median(lat), 1) if lat else 0.0),
        "latency_p95_ms": MetadataValue.float(
            round(lat[min(len(lat) - 1, int(0.95 * len(lat)))], 1) if lat else 0.0),
        "wall_s": MetadataValue.float(round(report.wall_s, 3)),
        "reported_models": MetadataValue.json(telemetry["models"]),
        "call_statuses": MetadataValue.json(telemetry["call_statuses"]),
        "latency_by_status": MetadataValue.json(telemetry["latency"]),
        "retried_degraded": report.retried_degraded,
        "settled_degraded": report.settled_degraded,
        "by_other_runs": report.by_other_runs,
        "allowed_degraded": allowed,
    }


def deviation_md(rows: list[dict]) -> str:
    return markdown_table(["dimension", "category", "global", "test", "deviation (pp)"],
                          [[r["dimension"], r["category"], f"{r['global']:.4f}",
                            f"{r['test']:.4f}", f"{100 * r['deviation']:+.3f}"] for r in rows])
