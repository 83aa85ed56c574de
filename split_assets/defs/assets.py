"""The assets: thin shells that reach the Workspace through the resource, call the core, and
report metadata to the Dagster UI. Expected errors leave each as a ``dagster.Failure`` with one
line (``failures.fails_cleanly``)."""

from collections import Counter
from typing import Any

from dagster import (
    AssetExecutionContext,
    MaterializeResult,
    MetadataValue,
    asset,
)

from split_assets.data.db import utc_now
from split_assets.defs import metadata as md
from split_assets.defs.diagnosis import diagnosis_signals
from split_assets.defs.failures import fails_cleanly
from split_assets.defs.freezing import refuse_invalid
from split_assets.defs.partitions import diag_fingerprint_partitions
from split_assets.defs.resources import SplitConfigResource
from split_assets.defs.tags import ALLOW_DEGRADED_TAG, GENERATED_AT_TAG, int_tag
from split_assets.diagnosis.plan import infra_rows
from split_assets.lib import interrupts
from split_assets.lib.canonical import atomic_write_bytes, canonical_bytes
from split_assets.lib.failpoints import failpoint
from split_assets.split.freeze import build_pools, manifest, write_frozen
from split_assets.split.selection import read_selection, select_trainval, write_selection
from split_assets.split.validation import draw_validation

GROUP = "video_split"


def _partitioned(**kwargs: Any) -> Any:
    """``@asset`` in the group, one partition per diagnosis fingerprint."""
    return asset(partitions_def=diag_fingerprint_partitions, group_name=GROUP, **kwargs)


@_partitioned(
    description=("One canonical prediction per question of the baseline run: the greatest "
                 "(attempt, created_at), its option letter (Video-MME's extraction), correct."))
@fails_cleanly
def canonical_predictions(context: AssetExecutionContext,
                          split_config: SplitConfigResource) -> MaterializeResult:
    ws = split_config.workspace(context.partition_key)
    # which judge this run is about, in the run's tags (UI runs too: added here, at the start)
    context.instance.add_run_tags(context.run.run_id, md.judge_tags(ws))
    return MaterializeResult(metadata=md.predictions_metadata(ws))


@_partitioned(
    deps=[canonical_predictions],
    description=("A T0 signal row for every wrong INFRA answer (execution failure, empty or "
                 "unextractable prediction); upserted, so re-materializing changes nothing."))
@fails_cleanly
def infra_t0_signals(context: AssetExecutionContext,
                     split_config: SplitConfigResource) -> MaterializeResult:
    ws = split_config.workspace(context.partition_key)
    rows = infra_rows(ws.predictions, ws.run_id, ws.fingerprint.key)
    with ws.store() as store:
        store.upsert_many(rows)
    ws.signals_changed()
    causes = Counter(r.rationale for r in rows)
    return MaterializeResult(metadata={
        "count": len(rows),
        "count_by_cause": md.counts_table(dict(sorted(causes.items())), "cause"),
    })


@_partitioned(
    deps=[canonical_predictions, infra_t0_signals, diagnosis_signals],
    description=("Picks exactly n_trainval trainval videos: floor_k T2 met, the test pool within "
                 "epsilon of the global mix and as close to it as the integers allow. Writes "
                 "the choice to `out_dir/.steps/<fingerprint>/<split_id>/`."))
@fails_cleanly
def trainval_selection(context: AssetExecutionContext,
                       split_config: SplitConfigResource) -> MaterializeResult:
    ws = split_config.workspace(context.partition_key)
    problem = ws.problem()
    selection = select_trainval(problem)
    failpoint("selection.done")
    write_selection(ws.selection_file, selection, ws.input_digests)
    return MaterializeResult(metadata={
        **md.selection_metadata(problem, selection),
        "selection_path": MetadataValue.path(str(ws.selection_file))})


@_partitioned(
    deps=[trainval_selection],
    description=("Splits trainval into train/validation and writes `pools.json` and "
                 "`split_manifest.json` atomically under `out_dir/<fingerprint>/<split_id>/`."))
@fails_cleanly
def frozen_pools(context: AssetExecutionContext,
                 split_config: SplitConfigResource) -> MaterializeResult:
    from split_assets.evaluation.power import pool_power

    ws = split_config.workspace(context.partition_key)
    problem = ws.problem()
    # the videos trainval_selection chose from these very inputs (refused if they changed since)
    selection = read_selection(ws.selection_file, ws.input_digests)
    frozen = build_pools(problem, selection, draw_validation(problem, selection.trainval),
                         ws.run_id, ws.fingerprint.key, ws.split_id)
    generated_at = context.run.tags.get(GENERATED_AT_TAG) or utc_now()
    vs = ws.loaded.config.video_split
    degraded = sorted(q.question_id for q in problem.questions if q.degraded)
    power = pool_power(problem, frozen.videos, ws.inputs.power_reruns(),
                       ws.loaded.config.evaluation.discordance)
    doc = manifest(problem, frozen, generated_at=generated_at, split=ws.split_id,
                   fingerprint=ws.fingerprint.key,
                   fingerprint_components=ws.fingerprint.components,
                   config_snapshot=ws.config_snapshot(),
                   input_digests=ws.input_digests,
                   val_wrong_min=vs.val_wrong_min, power=power, degraded=degraded)
    # the checks' conditions, in memory, before anything is written: a split that would fail
    # one is never frozen (the checks re-read the files on disk independently afterwards)
    settled = ws.settled_degraded()  # accepted when this split was first frozen
    refuse_invalid(context, problem, frozen, [q for q in degraded if q not in settled],
                   int_tag(context.run.tags, ALLOW_DEGRADED_TAG, 0), vs.val_wrong_min)
    interrupts.check()  # the last safe point before anything is frozen
    write_frozen(ws.out_dir, frozen, doc)
    return MaterializeResult(metadata=md.frozen_metadata(ws, problem, frozen, doc, degraded))


@_partitioned(
    deps=[frozen_pools],
    description=("Compares each evaluation.candidates run with the baseline on the frozen "
                 "validation and test pools: 2x2 tables, exact and mid-p McNemar, the "
                 "cluster-adjusted test, and the gain net of evaluation.control_run. Writes "
                 "evaluation.json beside pools.json."))
@fails_cleanly
def candidate_evaluation(context: AssetExecutionContext,
                         split_config: SplitConfigResource) -> MaterializeResult:
    from split_assets.evaluation.report import compare_runs
    from split_assets.evaluation.report import markdown as evaluation_markdown

    ws = split_config.workspace(context.partition_key)
    evaluation = ws.loaded.config.evaluation
    if not evaluation.candidates:
        return MaterializeResult(metadata={
            "note": "no evaluation.candidates: nothing to compare (import a run with "
                    "'split-assets import predictions --role candidate', or list run ids in "
                    "evaluation.candidates)"})
    reports = []
    for candidate in evaluation.candidates:
        context.log.info(f"comparing {candidate} with the baseline on validation and test")
        reports.append(compare_runs(ws, candidate, evaluation.control_run,
                                    control_where="evaluation.control_run",
                                    skip_incomplete=True))
    doc = {"split_id": ws.split_id, "diag_fingerprint": ws.fingerprint.key,
           "baseline_run_id": ws.run_id, "control_run": evaluation.control_run,
           "reports": reports}
    atomic_write_bytes(ws.files.evaluation, canonical_bytes(doc))
    metadata: dict[str, Any] = {"evaluation_path": MetadataValue.path(str(ws.files.evaluation)),
                                "candidates": len(reports)}
    for report in reports:
        metadata[f"candidate {report['candidate']}"] = MetadataValue.md(evaluation_markdown(report))
    return MaterializeResult(metadata=metadata)
