"""What the assets show in the Dagster UI, built for reading and plotting: tables as Dagster
table metadata (shown directly, no raw JSON where a table fits), digests shortened (the full
value one click away, in ``digests``), and top-level numbers the UI plots over
materializations (T1/T2 per pool, accuracy and deviation in pp, calls and tokens of a judge that
makes calls; nothing plotted that does not apply to the judge in use)."""

from __future__ import annotations

import json
import math
import statistics
from collections import Counter
from typing import TYPE_CHECKING, Any

from dagster import MetadataValue, TableColumn, TableRecord, TableSchema

from split_assets.sources.harness_db import CanonicalPrediction
from split_assets.split.problem import SplitProblem
from split_assets.split.problem_inputs import tier_distribution
from split_assets.split.stats import accuracy, deviation_rows, t2_by_type
from split_assets.store.signals import SignalRow

if TYPE_CHECKING:
    from split_assets.app.session import Session
    from split_assets.diagnosis.diagnosis_report import DiagnosisReport
    from split_assets.split.selection import Selection
    from split_assets.workspace.partition import Partition

SHORT_DIGEST = 12  # hex shown; the full digest is in the ``digests`` entry


def table(columns: list[tuple[str, str]], rows: list[list[Any]]) -> Any:
    """A Dagster table (``columns``: name and type: string, int, float, bool)."""
    names = [name for name, _ in columns]
    return MetadataValue.table(
        records=[TableRecord(dict(zip(names, row, strict=True))) for row in rows],
        schema=TableSchema(columns=[TableColumn(name, kind) for name, kind in columns]))


def counts_table(counts: dict[str, int], key: str) -> Any:
    return table([(key, "string"), ("count", "int")], [[k, v] for k, v in counts.items()])


def accuracy_table(preds: list[CanonicalPrediction], attr: str) -> Any:
    totals: Counter[str] = Counter()
    right: Counter[str] = Counter()
    for p in preds:
        totals[getattr(p, attr)] += 1
        right[getattr(p, attr)] += p.correct
    return table([(attr, "string"), ("questions", "int"), ("accuracy", "float")],
                 [[k, totals[k], round(right[k] / totals[k], 4)] for k in sorted(totals)])


def deviation_table(rows: list[dict[str, Any]]) -> Any:
    return table([("dimension", "string"), ("category", "string"), ("global", "float"),
                  ("test", "float"), ("deviation_pp", "float"), ("constrained", "bool")],
                 [[r["dimension"], r["category"], round(r["global"], 4), round(r["test"], 4),
                   round(100 * r["deviation"], 3), bool(r["constrained"])] for r in rows])


def components_table(components: dict[str, Any]) -> Any:
    """A fingerprint's components, one row each (digests shortened; the manifest has them
    in full)."""
    def shown(value: Any) -> str:
        if isinstance(value, str):
            return value[:SHORT_DIGEST] if len(value) == 64 else value
        return json.dumps(value, sort_keys=True)

    return table([("component", "string"), ("value", "string")],
                 [[name, shown(value)] for name, value in components.items()])


def judge_tags(partition: Partition) -> dict[str, str]:
    """Run tags naming the partition's fingerprint and its judge's components."""
    components = partition.fingerprint.components
    tags = {"split_assets/fingerprint": partition.key}
    for name in ("judge", "model", "prompt_version", "context"):
        tags[f"split_assets/{name}"] = str(components[name])
    return tags


def predictions_metadata(preds: list[CanonicalPrediction],
                         partition: Partition) -> dict[str, Any]:
    n = len(preds)
    stops = Counter(p.stop_reason or "(none)" for p in preds)
    return {
        "n": n,
        "accuracy": MetadataValue.float(round(sum(p.correct for p in preds) / n, 6)),
        "wrong": sum(not p.correct for p in preds),
        "infra": sum(p.infra for p in preds),
        "accuracy_by_task_type": accuracy_table(preds, "task_type"),
        "accuracy_by_difficulty": accuracy_table(preds, "difficulty"),
        "stop_reason_counts": counts_table(dict(sorted(stops.items())), "stop_reason"),
        "baseline_run_id": partition.run_id,
        "fingerprint": partition.key,
        "fingerprint_components": components_table(partition.fingerprint.components),
    }


def judge_note(session: Session) -> str:
    """What the judge saw of each answer."""
    diag = session.loaded.config.diag
    if session.judge is None:
        return (f"stale partition: re-frozen from the diagnoses stored under "
                f"{session.partition.key}; no judge was built")
    if diag.context == "full":
        return "full context: trace, tree and skills"
    if diag.judge == "openai":
        return "answer_only: question, options, answer and response only"
    if not diag.reference_runs:
        return ("answer_only: no reference runs, so every wrong answer is a lapse (T1); import "
                "other runs of the benchmark as reference runs to find persistent defects (T2)")
    return (f"answer_only: T2 when also wrong in >= {diag.agree_needed} of "
            f"{len(diag.reference_runs)} reference run(s)")


def diagnosis_metadata(session: Session, report: DiagnosisReport, rows: list[SignalRow],
                       telemetry: dict[str, Any], allowed: int) -> dict[str, Any]:
    tiers = tier_distribution(rows)
    errors = Counter(r.error_type or "(none)" for r in rows)
    components = session.partition.fingerprint.components
    out: dict[str, Any] = {  # what a researcher reads first, the fingerprint's parts last
        "t1": tiers.get("T1", 0),
        "t2": tiers.get("T2", 0),
        "tier_distribution": counts_table(tiers, "tier"),
        "wrong_non_infra": report.total_wrong,
        "diagnosed_now": report.diagnosed,
        "already_done": report.already_done,
        "degraded": sum(r.degraded for r in rows),
        "judge": components["judge"],
        "judge_note": judge_note(session),
        "error_type_distribution": counts_table(dict(sorted(errors.items())), "error_type"),
        "retried_degraded": report.retried_degraded,
        "settled_degraded": report.settled_degraded,
        "by_other_runs": report.by_other_runs,
        "allowed_degraded": allowed,
        "wall_s": MetadataValue.float(round(report.wall_s, 3)),
    }
    if components["judge"] != "rules":  # a judge that calls an endpoint
        out.update(_call_metadata(report, telemetry))
    out["fingerprint_components"] = components_table(components)
    return out


def _call_metadata(report: DiagnosisReport, telemetry: dict[str, Any]) -> dict[str, Any]:
    lat = sorted(report.latencies_ms)
    return {
        "calls": report.calls,
        "cache_hits": report.cache_hits,
        "prompt_tokens": report.prompt_tokens,
        "cached_prompt_tokens": report.cached_tokens,
        "cached_share": MetadataValue.float(
            round(report.cached_tokens / report.prompt_tokens, 4) if report.prompt_tokens
            else 0.0),
        "completion_tokens": report.completion_tokens,
        "tokens": report.prompt_tokens + report.completion_tokens,
        "latency_p50_ms": MetadataValue.float(round(statistics.median(lat), 1) if lat else 0.0),
        "latency_p95_ms": MetadataValue.float(
            round(lat[min(len(lat) - 1, int(0.95 * len(lat)))], 1) if lat else 0.0),
        "reported_models": MetadataValue.json(telemetry["models"]),
        "call_statuses": counts_table(telemetry["call_statuses"], "status"),
        # answers that failed validation, each followed by one repair call
        "repairs": telemetry["call_statuses"].get("invalid_output", 0),
        "latency_by_status": MetadataValue.json(telemetry["latency"]),
        **_concurrency_metadata(report.concurrency),
    }


def _concurrency_metadata(history: list[tuple[float, int]]) -> dict[str, Any]:
    """The judge's learned concurrency: where it ended (plotted across runs), its most, and
    its changes over the run (at most 12 rows: the first, the last, evenly between)."""
    if not history:
        return {}
    step = max(1, len(history) // 10)
    shown = history[:-1:step] + history[-1:]
    return {"concurrency": history[-1][1], "concurrency_max": max(n for _, n in history),
            "concurrency_over_run": table([("seconds", "float"), ("limit", "int")],
                                          [[float(t), n] for t, n in shown])}


def selection_metadata(problem: SplitProblem, selection: Selection) -> dict[str, Any]:
    trainval_qs = [q for v in selection.trainval for q in problem.videos[v]]
    test_qs = [q for v in selection.test for q in problem.videos[v]]
    t2 = t2_by_type(trainval_qs)
    dev = deviation_rows(problem, test_qs)
    return {
        "trainval_videos": len(selection.trainval),
        "test_videos": len(selection.test),
        "swaps": selection.swaps,
        "t2_vs_floor": table(
            [("task_type", "string"), ("floor", "int"), ("trainval_t2", "int"), ("met", "bool")],
            [[t, k, t2.get(t, 0), t2.get(t, 0) >= k]
             for t, k in sorted(problem.floors.items())]),
        "test_deviation": deviation_table(dev),
        "max_abs_deviation_pp": MetadataValue.float(max_abs_pp(dev)),
        "selector": problem.selection.selector,
        "global_accuracy": MetadataValue.float(round(accuracy(problem.questions), 6)),
        "test_accuracy": MetadataValue.float(round(accuracy(test_qs), 6)),
        "test_accuracy_deviation_pp": MetadataValue.float(
            round(100 * (accuracy(test_qs) - accuracy(problem.questions)), 4)),
    }


def max_abs_pp(rows: list[dict[str, Any]]) -> float:
    return round(100 * max((abs(r["deviation"]) for r in rows if r["constrained"]),
                           default=0.0), 4)


def agreement_metadata(partition: Partition) -> dict[str, Any]:
    """``diag.compare_with``: kappa of this judge against the named fingerprint (plottable
    numbers, the confusion matrix and the per-task-type kappas as tables)."""
    from split_assets.errors import UserError
    from split_assets.evaluation.judges import compare_fingerprints

    other = partition.loaded.config.diag.compare_with
    if other is None:
        return {}
    try:
        c = compare_fingerprints(partition, partition.key, other)
    except UserError as exc:  # informative only: never stops the diagnosis that was paid for
        return {"agreement": MetadataValue.text(f"not computed: {exc.line()}")}
    tier, error = c.tier.overall, c.error_type.overall
    labels = tier.labels
    return {
        "compare_with": other,
        "agreement_n": tier.n,
        "kappa_tier": _kappa_value(tier.kappa),
        "kappa_tier_ci": MetadataValue.text(f"[{tier.low:.3f}, {tier.high:.3f}] (95 %, "
                                            "bootstrap over videos)"),
        "kappa_error_type": _kappa_value(error.kappa),
        "tiers_changed": c.tiers_changed,
        "floors_changed": c.floors_changed,
        "agreement_confusion": table(
            [("this_judge", "string"), *((f"{other}:{x}", "int") for x in labels)],
            [[label, *map(int, row)] for label, row in zip(labels, tier.table, strict=True)]),
        "agreement_by_task_type": table(
            [("task_type", "string"), ("n", "int"), ("kappa_tier", "float"),
             ("ci_low", "float"), ("ci_high", "float")],
            [[t, k.n, *(None if math.isnan(x) else round(x, 4) for x in (k.kappa, k.low,
                                                                          k.high))]
             for t, k in c.tier.by_task_type.items()]),
    }


def _kappa_value(kappa: float) -> Any:
    """A plottable kappa; undefined (one label only) as text, not a NaN point."""
    if math.isnan(kappa):
        return MetadataValue.text("undefined: a rater used one label only")
    return MetadataValue.float(round(kappa, 4))
