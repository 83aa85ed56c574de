"""The assets: thin shells that load through the resource, call the core, and report metadata
to the Dagster UI. Expected errors leave each as a ``dagster.Failure`` with one line
(``failures.fails_cleanly``)."""


import statistics
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dagster import (
    AssetCheckEvaluation,
    AssetCheckSeverity,
    AssetExecutionContext,
    MaterializeResult,
    MetadataValue,
    Output,
    asset,
)

from split_assets import pipeline
from split_assets.data.harness import CanonicalPrediction
from split_assets.data.signals import SignalStore, utc_now
from split_assets.errors import ConfigError, RunFailure, SplitAssetsError
from split_assets.evaluation.power import pool_power
from split_assets.evaluation.report import compare_runs
from split_assets.evaluation.report import markdown as evaluation_markdown
from split_assets.failures import as_failure, fails_cleanly
from split_assets.lib.canonical import atomic_write_bytes, canonical_bytes
from split_assets.lib.failpoints import failpoint
from split_assets.partitions import diag_fingerprint_partitions
from split_assets.resources import (
    ALLOW_DEGRADED_TAG,
    GENERATED_AT_TAG,
    NO_WAIT_TAG,
    SplitConfigResource,
    int_tag,
)
from split_assets.split.freeze import (
    MANIFEST_FILE,
    POOLS,
    POOLS_FILE,
    FrozenSplit,
    build_pools,
    manifest,
    pool_questions,
    write_frozen,
)
from split_assets.split.invariants import verify as verify_invariants
from split_assets.split.problem import SplitProblem
from split_assets.split.selection import Selection, select_trainval
from split_assets.split.stats import (
    accuracy,
    deviation_rows,
    markdown_table,
    t2_by_type,
    tier_counts,
)
from split_assets.split.validation import draw_validation, max_validation_wrong

GROUP = "video_split"


def _accuracy_table(preds: list[CanonicalPrediction], attr: str) -> str:
    totals: Counter[str] = Counter()
    right: Counter[str] = Counter()
    for p in preds:
        totals[getattr(p, attr)] += 1
        right[getattr(p, attr)] += p.correct
    rows = [[k, totals[k], f"{right[k] / totals[k]:.3f}"] for k in sorted(totals)]
    return markdown_table([attr, "questions", "accuracy"], rows)


@asset(partitions_def=diag_fingerprint_partitions, group_name=GROUP,
       description="One canonical prediction per question of the baseline run: the greatest "
                   "(attempt, created_at), its option letter (Video-MME's extraction), correct.")
@fails_cleanly
def canonical_predictions(context: AssetExecutionContext,
                          split_config: SplitConfigResource) -> Output[list[CanonicalPrediction]]:
    ctx = split_config.context_for(context.partition_key)
    _, preds = pipeline.load_inputs(ctx)
    n = len(preds)
    stops = Counter(p.stop_reason or "(none)" for p in preds)
    return Output(preds, metadata={
        "n": n,
        "accuracy": MetadataValue.float(round(sum(p.correct for p in preds) / n, 6)),
        "wrong": sum(not p.correct for p in preds),
        "infra": sum(p.infra for p in preds),
        "accuracy_by_task_type": MetadataValue.md(_accuracy_table(preds, "task_type")),
        "accuracy_by_difficulty": MetadataValue.md(_accuracy_table(preds, "difficulty")),
        "stop_reason_counts": MetadataValue.json(dict(sorted(stops.items()))),
        "baseline_run_id": ctx.run_id,
    })


@asset(partitions_def=diag_fingerprint_partitions, group_name=GROUP,
       description="A T0 signal row for every wrong INFRA answer (execution failure, empty or "
                   "unextractable prediction); upserted, so re-materializing changes nothing.")
@fails_cleanly
def infra_t0_signals(context: AssetExecutionContext, split_config: SplitConfigResource,
                     canonical_predictions: list[CanonicalPrediction]) -> MaterializeResult:
    ctx = split_config.context_for(context.partition_key)
    rows = pipeline.infra_rows(canonical_predictions, ctx)
    with SignalStore(ctx.loaded.paths.signals_db) as store:
        store.upsert_many(rows)
    causes = Counter(r.rationale for r in rows)
    return MaterializeResult(metadata={
        "count": len(rows),
        "count_by_cause": MetadataValue.json(dict(sorted(causes.items()))),
    })


@asset(partitions_def=diag_fingerprint_partitions, group_name=GROUP,
       description="Diagnoses every wrong non-INFRA answer not yet done (or degraded) for this "
                   "(run, fingerprint), committing each row as it completes.")
@fails_cleanly
def diagnosis_signals(context: AssetExecutionContext, split_config: SplitConfigResource,
                      canonical_predictions: list[CanonicalPrediction]) -> MaterializeResult:
    ctx = split_config.context_for(context.partition_key)
    benchmark, _ = pipeline.load_inputs(ctx)
    allowed = int_tag(context.run.tags, ALLOW_DEGRADED_TAG, 0)
    with SignalStore(ctx.loaded.paths.signals_db) as store:
        # counts alone can show the split is impossible: say so before paying for a diagnosis
        pipeline.check_before_diagnosis(ctx, benchmark, canonical_predictions, store)
        report = pipeline.diagnose(ctx, benchmark, canonical_predictions, store,
                                   progress=context.log.info,
                                   wait=context.run.tags.get(NO_WAIT_TAG) != "1",
                                   settled=pipeline.settled_degraded(ctx))
        rows = [r for r in store.rows(ctx.run_id, ctx.fingerprint.key) if not r.infra]
        models = store.reported_models(ctx.fingerprint.key)
        call_statuses = store.call_statuses(ctx.fingerprint.key)
        latency = store.latency_by_status(ctx.fingerprint.key)
    if len(models) > 1:
        context.log.warning(f"the endpoint reported {len(models)} different models within "
                            f"{ctx.fingerprint.key}: {', '.join(models)}")
    if report.call_failures:
        gone = report.call_failures
        raise as_failure(RunFailure(
            f"the endpoint gave no answer for {len(gone)} question(s) even after a second pass "
            f"(e.g. {', '.join(gone[:5])}); nothing was frozen", ctx.fingerprint.key,
            "check the endpoint, then run again: finished diagnoses are kept and not paid twice"),
            unanswered=len(gone), calls=report.calls, diagnosed_now=report.diagnosed)
    if len(report.still_degraded) > allowed:
        stuck = report.still_degraded
        raise as_failure(RunFailure(
            f"{len(stuck)} diagnosis(es) stayed degraded after a second pass (e.g. "
            f"{', '.join(stuck[:5])}); the split was not frozen", ctx.fingerprint.key,
            "materialize again to retry them (finished diagnoses are kept and not paid "
            f"twice), or accept them as not-T2 with --allow-degraded {len(stuck)} "
            f"(run tag {ALLOW_DEGRADED_TAG})"),
            degraded=len(stuck), allowed=allowed,
            degraded_questions=MetadataValue.json(stuck[:100]),
            calls=report.calls, diagnosed_now=report.diagnosed)
    lat = sorted(report.latencies_ms)
    errors = Counter(r.error_type or "(none)" for r in rows)
    context.log.info(f"diagnosed {report.diagnosed} new, {report.already_done} already done")
    diag = ctx.loaded.config.diag
    note = "full context: trace, tree and skills"
    if diag.context == "answer_only":
        note = ("answer_only: no reference runs, so every wrong answer is a lapse (T1); import "
                "other runs of the benchmark as reference runs to find persistent defects (T2)"
                if not diag.reference_runs else
                f"answer_only: T2 when also wrong in >= {diag.agree_needed} of "
                f"{len(diag.reference_runs)} reference run(s)")
        if diag.judge == "openai":
            note = "answer_only: question, options, answer and response only"
    return MaterializeResult(metadata={
        "judge": ctx.loaded.config.diag.judge,
        "judge_note": note,
        "fingerprint_components": MetadataValue.json(ctx.fingerprint.components),
        "wrong_non_infra": report.total_wrong,
        "already_done": report.already_done,
        "diagnosed_now": report.diagnosed,
        "degraded": sum(r.degraded for r in rows),
        "tier_distribution": MetadataValue.json(pipeline.tier_distribution(rows)),
        "error_type_distribution": MetadataValue.json(dict(sorted(errors.items()))),
        "calls": report.calls,
        "cache_hits": report.cache_hits,
        "prompt_tokens": report.prompt_tokens,
        "completion_tokens": report.completion_tokens,
        "latency_p50_ms": MetadataValue.float(round(statistics.median(lat), 1) if lat else 0.0),
        "latency_p95_ms": MetadataValue.float(
            round(lat[min(len(lat) - 1, int(0.95 * len(lat)))], 1) if lat else 0.0),
        "wall_s": MetadataValue.float(round(report.wall_s, 3)),
        "reported_models": MetadataValue.json(models),
        "call_statuses": MetadataValue.json(call_statuses),
        "latency_by_status": MetadataValue.json(latency),
        "retried_degraded": report.retried_degraded,
        "settled_degraded": report.settled_degraded,
        "by_other_runs": report.by_other_runs,
        "allowed_degraded": allowed,
    })


@dataclass(frozen=True)
class SelectionResult:
    """trainval_selection's output: the problem it solved and the videos it chose."""

    problem: SplitProblem
    selection: Selection
    input_digests: dict[str, str]
    reference_wrong: dict[str, tuple[bool | None, ...]]
    control: dict[str, bool | None] | None


@asset(partitions_def=diag_fingerprint_partitions, group_name=GROUP,
       deps=[infra_t0_signals, diagnosis_signals],
       description="Picks exactly n_trainval trainval videos: floor_k T2 met, the test pool "
                   "within epsilon of the global mix and as close to it as the integers allow.")
@fails_cleanly
def trainval_selection(context: AssetExecutionContext, split_config: SplitConfigResource,
                       canonical_predictions: list[CanonicalPrediction]) -> Output[SelectionResult]:
    ctx = split_config.context_for(context.partition_key)
    with SignalStore(ctx.loaded.paths.signals_db) as store:
        rows = store.rows(ctx.run_id, ctx.fingerprint.key)
    benchmark, _ = pipeline.load_inputs(ctx)
    problem = pipeline.split_problem(ctx, canonical_predictions, rows, benchmark)
    selection = select_trainval(problem)
    failpoint("selection.done")
    digests = pipeline.input_digests(ctx, benchmark, canonical_predictions, rows)
    trainval_qs = [q for v in selection.trainval for q in problem.videos[v]]
    test_qs = [q for v in selection.test for q in problem.videos[v]]
    t2 = t2_by_type(trainval_qs)
    floors = [[t, k, t2.get(t, 0), "yes" if t2.get(t, 0) >= k else "NO"]
              for t, k in sorted(problem.floor_k.items())]
    dev = deviation_rows(problem, test_qs)
    references = pipeline.reference_outcomes(ctx, benchmark)
    control = pipeline.control_outcomes(ctx, benchmark)
    return Output(SelectionResult(problem, selection, digests, references, control), metadata={
        "trainval_videos": len(selection.trainval),
        "test_videos": len(selection.test),
        "swaps": selection.swaps,
        "t2_vs_floor": MetadataValue.md(markdown_table(
            ["task type", "floor", "trainval T2", "met"], floors) if floors else "no floors"),
        "test_deviation": MetadataValue.md(_deviation_md(dev)),
        "max_abs_deviation_pp": MetadataValue.float(
            round(100 * max(abs(r["deviation"]) for r in dev if r["constrained"]), 4)),
        "selector": problem.selector,
        "global_accuracy": MetadataValue.float(round(accuracy(problem.questions), 6)),
        "test_accuracy": MetadataValue.float(round(accuracy(test_qs), 6)),
        "test_accuracy_deviation_pp": MetadataValue.float(
            round(100 * (accuracy(test_qs) - accuracy(problem.questions)), 4)),
    })


def _deviation_md(rows: list[dict]) -> str:
    return markdown_table(["dimension", "category", "global", "test", "deviation (pp)"],
                          [[r["dimension"], r["category"], f"{r['global']:.4f}",
                            f"{r['test']:.4f}", f"{100 * r['deviation']:+.3f}"] for r in rows])


@dataclass(frozen=True)
class FrozenResult:
    """frozen_pools' output, read by the checks."""

    problem: SplitProblem
    pools_path: Path
    manifest_path: Path
    pools_sha256: str
    val_wrong_min: int
    power: dict[str, Any]


@asset(partitions_def=diag_fingerprint_partitions, group_name=GROUP,
       description="Splits trainval into train/validation and writes pools.json and "
                   "split_manifest.json atomically under out_dir/<fingerprint>/<split_id>/.")
@fails_cleanly
def frozen_pools(context: AssetExecutionContext, split_config: SplitConfigResource,
                 trainval_selection: SelectionResult) -> Output[FrozenResult]:
    ctx = split_config.context_for(context.partition_key)
    problem, selection = trainval_selection.problem, trainval_selection.selection
    validation = draw_validation(problem, selection.trainval)
    frozen: FrozenSplit = build_pools(problem, selection, validation, ctx.run_id,
                                      ctx.fingerprint.key, ctx.split_id)
    generated_at = context.run.tags.get(GENERATED_AT_TAG) or utc_now()
    vs = ctx.loaded.config.video_split
    allowed = int_tag(context.run.tags, ALLOW_DEGRADED_TAG, 0)
    degraded = sorted(q.question_id for q in problem.questions if q.degraded)
    settled = pipeline.settled_degraded(ctx)  # accepted when this split was first frozen
    power = pool_power(problem, frozen.videos, trainval_selection.reference_wrong,
                       ctx.loaded.config.evaluation.discordance, trainval_selection.control)
    doc = manifest(problem, frozen, generated_at=generated_at, split=ctx.split_id,
                   fingerprint=ctx.fingerprint.key,
                   fingerprint_components=ctx.fingerprint.components,
                   config_snapshot=pipeline.config_snapshot(ctx),
                   input_digests=trainval_selection.input_digests,
                   val_wrong_min=vs.val_wrong_min, power=power,
                   degraded=degraded)
    # the checks' conditions, in memory, before anything is written: a split that would fail
    # one is never frozen (the checks re-read the files on disk independently afterwards)
    _refuse_invalid(context, problem, frozen, [q for q in degraded if q not in settled],
                    allowed, vs.val_wrong_min)
    write_frozen(ctx.out_dir, frozen, doc)
    by_pool = pool_questions(problem, frozen)
    counts = [[name, len(frozen.videos[name]), len(by_pool[name]),
               sum(not q.correct for q in by_pool[name])] for name in POOLS]
    tiers = {name: tier_counts(by_pool[name]) for name in POOLS}
    pools_path, manifest_path = ctx.out_dir / POOLS_FILE, ctx.out_dir / MANIFEST_FILE
    return Output(FrozenResult(problem, pools_path, manifest_path, frozen.sha256,
                               vs.val_wrong_min, power), metadata={
        "pools_sha256": frozen.sha256,
        "split_id": ctx.split_id,
        "pools_path": MetadataValue.path(str(pools_path)),
        "manifest_path": MetadataValue.path(str(manifest_path)),
        "counts": MetadataValue.md(markdown_table(["pool", "videos", "questions", "wrong"],
                                                  counts)),
        "test_deviation": MetadataValue.md(_deviation_md(doc["test_deviation"])),
        "tier_counts": MetadataValue.json(tiers),
        "validation_wrong": doc["validation_wrong"],
        "baseline_accuracy": MetadataValue.json(doc["baseline_accuracy"]),
        "degraded_frozen": len(degraded),
        "generated_at": generated_at,
    })


def _refuse_invalid(context: AssetExecutionContext, problem: SplitProblem,
                    frozen: FrozenSplit, degraded: list[str], allowed: int,
                    val_wrong_min: int) -> None:
    """Evaluate the checks' conditions on the split in memory; a failing one is recorded as
    that check failing and stops the freeze (nothing is written)."""
    failures: list[tuple[str, str, SplitAssetsError]] = []
    for result in verify_invariants(problem, frozen.data, frozen.sha256):
        if not result.passed:
            failures.append((result.name, result.detail, RunFailure(
                f"check {result.name} would fail: {result.detail}", "frozen_pools",
                "nothing was frozen; report this as a bug with the run's logs")))
    val_wrong = sum(not q.correct for v in frozen.videos["validation"]
                    for q in problem.videos[v])
    if val_wrong < val_wrong_min:
        reachable = max_validation_wrong(problem, tuple(frozen.videos["train"]
                                                        + frozen.videos["validation"]))
        detail = (f"validation holds {val_wrong} baseline-wrong questions, need {val_wrong_min}"
                  f" (at most {reachable} with {len(frozen.videos['validation'])} validation "
                  "videos)")
        failures.append(("mcnemar_power", detail, ConfigError(
            f"val_wrong_min cannot be met: {detail}", "video_split.val_wrong_min",
            "raise val_ratio or n_trainval, or lower val_wrong_min; nothing was frozen")))
    if len(degraded) > allowed:
        failures.append(("", "", RunFailure(
            f"{len(degraded)} degraded diagnosis(es) in the split (e.g. {', '.join(degraded[:5])})",
            "frozen_pools", f"materialize diagnosis_signals again to retry them, or allow them "
                            f"with --allow-degraded {len(degraded)}")))
    for check, detail, _ in failures:
        if check:
            context.log_event(AssetCheckEvaluation(
                asset_key=context.asset_key, check_name=check, passed=False,
                severity=AssetCheckSeverity.ERROR, description=f"{detail} (nothing was frozen)"))
    if failures:
        raise failures[0][2]


@asset(partitions_def=diag_fingerprint_partitions, group_name=GROUP, deps=[frozen_pools],
       description="Compares each evaluation.candidates run with the baseline on the frozen "
                   "validation and test pools: 2x2 tables, exact and mid-p McNemar, the "
                   "cluster-adjusted test, and the gain net of evaluation.control_run. "
                   "Writes evaluation.json beside pools.json.")
@fails_cleanly
def candidate_evaluation(context: AssetExecutionContext,
                         split_config: SplitConfigResource) -> Output[dict[str, Any]]:
    ctx = split_config.context_for(context.partition_key)
    evaluation = ctx.loaded.config.evaluation
    if not evaluation.candidates:
        return Output({"reports": []}, metadata={
            "note": "no evaluation.candidates: nothing to compare (import a run with "
                    "'split-assets import predictions --role candidate', or list run ids in "
                    "evaluation.candidates)"})
    reports = []
    for candidate in evaluation.candidates:
        context.log.info(f"comparing {candidate} with the baseline on validation and test")
        reports.append(compare_runs(ctx, candidate, evaluation.control_run,
                                    control_where="evaluation.control_run",
                                    skip_incomplete=True))
    doc = {"split_id": ctx.split_id, "diag_fingerprint": ctx.fingerprint.key,
           "baseline_run_id": ctx.run_id, "control_run": evaluation.control_run,
           "reports": reports}
    path = ctx.out_dir / "evaluation.json"
    atomic_write_bytes(path, canonical_bytes(doc))
    metadata: dict[str, Any] = {"evaluation_path": MetadataValue.path(str(path)),
                                "candidates": len(reports)}
    for report in reports:
        metadata[f"candidate {report['candidate']}"] = MetadataValue.md(evaluation_markdown(report))
    return Output(doc, metadata=metadata)
