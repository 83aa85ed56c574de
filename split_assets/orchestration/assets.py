"""The assets: thin shells that take the run's ``Session`` from the resource, hand its pieces
(inputs, judge, partition) to the core, and report metadata to the Dagster UI. Expected errors
leave each as a ``dagster.Failure`` with one line (``failures.fails_cleanly``)."""

from collections import Counter
from collections.abc import Iterator, Mapping
from typing import Any

from dagster import (
    AssetCheckResult,
    AssetExecutionContext,
    MaterializeResult,
    MetadataValue,
    asset,
)

from split_assets.app.session import Session
from split_assets.diagnosis.plan import infra_rows
from split_assets.errors import RunFailure
from split_assets.lib import interrupts
from split_assets.lib.canonical import atomic_write_bytes, canonical_bytes
from split_assets.lib.failpoints import failpoint
from split_assets.orchestration import metadata as md
from split_assets.orchestration import names as n
from split_assets.orchestration import pool_checks
from split_assets.orchestration.diagnosis import build_diagnosis_signals
from split_assets.orchestration.failures import fails_cleanly
from split_assets.orchestration.frozen_metadata import frozen_metadata
from split_assets.orchestration.names import Names
from split_assets.orchestration.partitions import partitions_of
from split_assets.orchestration.resources import options_of, session_of
from split_assets.orchestration.tags import GENERATED_AT_TAG
from split_assets.split.freeze import FrozenSplit, build_pools, manifest, write_frozen
from split_assets.split.problem import SplitProblem
from split_assets.split.selection import read_selection, select_trainval, write_selection
from split_assets.split.validation import draw_validation
from split_assets.store.conventions import utc_now
from split_assets.workspace.partition import Partition, config_snapshot


def build_assets(names: Names, shards: int = 1) -> list[Any]:
    """The workspace's six assets (and frozen_pools' checks) under its names; ``shards``:
    ``diag.shards`` (diagnosis_signals' shape)."""
    return [*_reading_assets(names), build_diagnosis_signals(names, shards),
            *_freezing_assets(names)]


def _partitioned(names: Names) -> Any:
    """``@asset`` in the workspace's group, one partition per diagnosis fingerprint, using the
    workspace's session, signal store and harness db (and ``uses``)."""
    partitions = partitions_of(names)
    used = {names.resource(r) for r in (n.SESSION, n.SIGNAL_STORE, n.HARNESS_DB)}

    def partitioned(name: str, deps: tuple[str, ...] = (), uses: frozenset[str] = frozenset(),
                    **kwargs: Any) -> Any:
        return asset(name=name, key_prefix=names.key_prefix, partitions_def=partitions,
                     group_name=names.group, deps=[names.key(d) for d in deps],
                     required_resource_keys=used | {names.resource(u) for u in uses},
                     **kwargs)

    return partitioned


def _reading_assets(names: Names) -> list[Any]:
    partitioned = _partitioned(names)

    @partitioned("canonical_predictions", description=(
        "One canonical prediction per question of the baseline run: the greatest "
        "(attempt, created_at), its option letter (Video-MME's extraction), correct."))
    @fails_cleanly
    def canonical_predictions(context: AssetExecutionContext) -> MaterializeResult:
        s = session_of(context, names)
        # which judge this run is about, in the run's tags (UI runs too: added at the start)
        context.instance.add_run_tags(context.run.run_id, md.judge_tags(s.partition))
        return MaterializeResult(metadata=md.predictions_metadata(s.inputs.predictions,
                                                                  s.partition))

    @partitioned("infra_t0_signals", deps=("canonical_predictions",), description=(
        "A T0 signal row for every wrong INFRA answer (execution failure, empty or "
        "unextractable prediction); upserted, so re-materializing changes nothing."))
    @fails_cleanly
    def infra_t0_signals(context: AssetExecutionContext) -> MaterializeResult:
        return _infra_t0_signals(session_of(context, names))

    return [canonical_predictions, infra_t0_signals]


def _freezing_assets(names: Names) -> list[Any]:
    partitioned = _partitioned(names)

    @partitioned("trainval_selection", deps=("canonical_predictions", "infra_t0_signals",
                                             "diagnosis_signals"), description=(
        "Picks exactly n_trainval trainval videos: floor_k T2 met, the test pool within "
        "epsilon of the global mix and as close to it as the integers allow. Writes "
        "the choice to `out_dir/.steps/<fingerprint>/<split_id>/`."))
    @fails_cleanly
    def trainval_selection(context: AssetExecutionContext) -> MaterializeResult:
        return _trainval_selection(session_of(context, names))

    @partitioned("frozen_pools", deps=("trainval_selection",), uses=frozenset({n.RUN_OPTIONS}),
                 check_specs=pool_checks.frozen_check_specs(names), description=(
        "Splits trainval into train/validation, evaluates its eight checks in memory, "
        "and only when all pass writes `pools.json` and `split_manifest.json` "
        "atomically under `out_dir/<fingerprint>/<split_id>/`."))
    @fails_cleanly
    def frozen_pools(context: AssetExecutionContext
                     ) -> Iterator[AssetCheckResult | MaterializeResult]:
        options = options_of(context, names)
        # numbers to plot only across more than one partition (one dot plots nothing)
        plots = len(context.instance.get_materialized_partitions(names.key("frozen_pools"))
                    | {context.partition_key}) > 1
        yield from _frozen_pools(session_of(context, names), context.run.tags,
                                 options.allowed_degraded(context.run.tags), options.refreeze,
                                 plots)

    @partitioned("candidate_evaluation", deps=("frozen_pools",), description=(
        "Compares each evaluation.candidates run with the baseline on the frozen "
        "validation pool (test only through 'split-assets compare --pool test'): 2x2 "
        "tables, exact and mid-p McNemar, the cluster-adjusted test, and the gain net of "
        "evaluation.control_run. Each is a row of the evaluation ledger. Writes "
        "evaluation.json beside pools.json."))
    @fails_cleanly
    def candidate_evaluation(context: AssetExecutionContext) -> MaterializeResult:
        return _candidate_evaluation(context, session_of(context, names))

    return [trainval_selection, frozen_pools, candidate_evaluation]


def _infra_t0_signals(s: Session) -> MaterializeResult:
    rows = infra_rows(s.inputs.predictions, s.partition.run_id, s.partition.key)
    with s.partition.store() as store:
        store.upsert_many(rows)
    causes = Counter(r.rationale for r in rows)
    return MaterializeResult(metadata={
        "count": len(rows),
        "count_by_cause": md.counts_table(dict(sorted(causes.items())), "cause"),
    })


def _trainval_selection(s: Session) -> MaterializeResult:
    problem, digests = s.split_inputs()
    selection = select_trainval(problem)
    failpoint("selection.done")
    write_selection(s.partition.selection_file, selection, digests())
    return MaterializeResult(metadata={
        **md.selection_metadata(problem, selection),
        "selection_path": MetadataValue.path(str(s.partition.selection_file))})


def _frozen_pools(s: Session, tags: Mapping[str, str], allowed: int, refreeze: bool = False,
                  plots: bool = False) -> Iterator[AssetCheckResult | MaterializeResult]:
    partition = s.partition
    problem, digests_of = s.split_inputs()
    digests = digests_of()
    # the videos trainval_selection chose from these very inputs (refused if they changed since)
    selection = read_selection(partition.selection_file, digests)
    frozen = build_pools(problem, selection, draw_validation(problem, selection.trainval),
                         partition.run_id, partition.key, partition.split_id)
    doc = _manifest_of(s, problem, frozen, digests, tags.get(GENERATED_AT_TAG) or utc_now())
    vs = s.loaded.config.video_split
    results, failed = pool_checks.evaluate(partition, problem, frozen, doc["power"],
                                           vs.val_wrong_min, _references(s, problem),
                                           doc.get("warnings", []))
    if failed is None:  # degraded diagnoses beyond --allow-degraded: no split, no check run
        settled = partition.settled_degraded()  # accepted when this split was first frozen
        refuse_degraded([q for q in doc["degraded_question_ids"] if q not in settled], allowed)
    if failed is None:  # earlier splits' looks at these test questions: a new split is
        # refused unless refreeze; else they are copied into its ledger and its manifest
        doc["test_exposure"] = _test_exposure(s, problem, frozen,
                                              digests["baseline_predictions"], refreeze)
    yield from results  # each check's result, before anything is written
    if failed is not None:
        raise failed
    interrupts.check()  # the last safe point before anything is frozen
    write_frozen(partition.out_dir, frozen, doc)
    yield MaterializeResult(metadata=frozen_metadata(partition, problem, frozen, doc,
                                                        doc["degraded_question_ids"], plots))


def _references(s: Session, problem: SplitProblem) -> dict[str, tuple[int, int]]:
    from split_assets.evaluation.power import reference_discordance

    runs = tuple(s.loaded.config.diag.reference_runs)
    scored = s.inputs.outcomes_of(runs, "reference", "diag.reference_runs") if runs else {}
    return reference_discordance(problem, {run: o.correct for run, o in scored.items()})


def _test_exposure(s: Session, problem: SplitProblem, frozen: FrozenSplit,
                   baseline: str, refreeze: bool) -> dict[str, Any]:
    """The split is recorded as frozen; a new one after a test look at the baseline is
    refused unless ``refreeze`` (``evaluation/exposure.py``)."""
    from split_assets.evaluation.exposure import TestPool, freeze_exposure
    from split_assets.evaluation.shared_budget import shared_budget, workspace_of
    from split_assets.store.ledger import FrozenRecord

    partition = s.partition
    pool = TestPool(baseline, partition.split_id, frozen.sha256, tuple(frozen.pools["test"]))
    record = FrozenRecord(baseline, partition.run_id, partition.key, partition.split_id,
                          frozen.sha256, frozen.data.decode("utf-8"))
    video_of = {q.question_id: q.video_id for q in problem.questions}
    with partition.store() as store, shared_budget(
            store, workspace_of(partition.config_path), baseline,
            partition.evaluation.test_looks_max):  # other workspaces' looks and splits
        return freeze_exposure(store, pool, record, not partition.files.pools.is_file(),
                               refreeze, video_of)


def _manifest_of(s: Session, problem: SplitProblem, frozen: FrozenSplit,
                 digests: dict[str, str], generated_at: str) -> dict[str, Any]:
    """The manifest of a split about to be frozen (its power figures included)."""
    from split_assets.evaluation.power import pool_power
    from split_assets.split.degenerate import degenerate_warnings

    partition, loaded = s.partition, s.loaded
    diag = loaded.config.diag
    power = pool_power(problem, frozen.videos, s.inputs.power_reruns(),
                       loaded.config.evaluation.discordance)
    return manifest(problem, frozen, generated_at=generated_at, split=partition.split_id,
                    fingerprint=partition.key,
                    fingerprint_components=partition.fingerprint.components,
                    config_snapshot=config_snapshot(loaded), input_digests=digests,
                    val_wrong_min=loaded.config.video_split.val_wrong_min, power=power,
                    degraded=sorted(q.question_id for q in problem.questions if q.degraded),
                    warnings=degenerate_warnings(
                        problem, references=len(diag.reference_runs),
                        answer_only_rules=(diag.judge, diag.context) == ("rules",
                                                                         "answer_only")))


def refuse_degraded(degraded: list[str], allowed: int) -> None:
    """More degraded diagnoses in the split than ``--allow-degraded`` accepts: not frozen."""
    if len(degraded) > allowed:
        raise RunFailure(
            f"{len(degraded)} degraded diagnosis(es) in the split (e.g. {', '.join(degraded[:5])})",
            "frozen_pools", f"materialize diagnosis_signals again to retry them, or allow them "
                            f"with --allow-degraded {len(degraded)}")


def _candidate_evaluation(context: AssetExecutionContext, s: Session) -> MaterializeResult:
    from split_assets.evaluation.comparison import compare_runs
    from split_assets.evaluation.comparison import markdown as evaluation_markdown

    partition, evaluation = s.partition, s.loaded.config.evaluation
    if not evaluation.candidates:
        return MaterializeResult(metadata={
            "note": "no evaluation.candidates: nothing to compare (import a run with "
                    "'split-assets import predictions --role candidate', or list run ids in "
                    "evaluation.candidates)"})
    reports = []
    for candidate in evaluation.candidates:
        context.log.info(f"comparing {candidate} with the baseline on validation (test: "
                         "only through split-assets compare --pool test)")
        reports.append(compare_runs(s.inputs, partition, candidate, evaluation.control_run,
                                    control_where="evaluation.control_run",
                                    skip_incomplete=True))
    doc = {"split_id": partition.split_id, "diag_fingerprint": partition.key,
           "baseline_run_id": partition.run_id, "control_run": evaluation.control_run,
           "reports": reports}
    atomic_write_bytes(partition.files.evaluation, canonical_bytes(doc))
    metadata: dict[str, Any] = {"evaluation_path":
                                MetadataValue.path(str(partition.files.evaluation)),
                                "candidates": len(reports),
                                "pools": "validation only: test is looked at only through "
                                         "'split-assets compare --pool test'",
                                **_ledger_metadata(partition, reports)}
    for report in reports:
        metadata[f"candidate {report['candidate']}"] = MetadataValue.md(evaluation_markdown(report))
    return MaterializeResult(metadata=metadata)


def _ledger_metadata(partition: Partition, reports: list[dict[str, Any]]) -> dict[str, Any]:
    """Each report's pools go to the evaluation ledger (source ``asset``); the distinct answers
    looked at per pool so far (plotted across materializations: how often a pool was used)."""
    from split_assets.evaluation.claims import record

    for report in reports:
        record(partition, report, "asset")
    with partition.store(read_only=True) as store:
        looks = store.looks(partition.split_id)
    return {f"looks_{pool}": MetadataValue.int(len({look.answers_digest for look in looks
                                                    if look.pool == pool}))
            for pool in ("validation", "test")}
