"""``diagnosis_signals``. With ``diag.shards: 1`` (the default) one step checks what counts
alone can refute, diagnoses and reports. With ``diag.shards: K > 1`` it is a graph-backed asset:
one step checks and plans (once, before anything is paid), K steps diagnose (in parallel under
the multiprocess, celery or k8s executor), and one step joins their reports before the
selection. The shape follows the config when the code location loads; a run follows the
config it reads (a graph runs any K, one step diagnoses everything). The shards share the work
through the signal store's leases: none pays for a question another has claimed or
finished."""

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dagster import (
    AssetCheckResult,
    AssetExecutionContext,
    AssetIn,
    DynamicOut,
    DynamicOutput,
    In,
    MaterializeResult,
    Nothing,
    OpExecutionContext,
    Out,
    asset,
    graph_asset,
    op,
)

from split_assets.app.session import Session
from split_assets.diagnosis.diagnosis_report import (
    DiagnosisReport,
    merge_reports,
    stop_unless_settled,
)
from split_assets.diagnosis.plan import check_before_diagnosis, plan_for
from split_assets.diagnosis.runner import diagnose, refuse_if_leased
from split_assets.orchestration import metadata as md
from split_assets.orchestration import names as n
from split_assets.orchestration.checks import agreement_check_spec, judge_agreement_result
from split_assets.orchestration.failures import fails_cleanly
from split_assets.orchestration.names import Names
from split_assets.orchestration.partitions import partitions_of
from split_assets.orchestration.resources import options_of, session_of
from split_assets.orchestration.tags import ALLOW_DEGRADED_TAG


def forget_run(context: OpExecutionContext) -> None:
    """Remove what this run's ops handed on (a shard's number and report, in Dagster's run-scoped
    ``$DAGSTER_HOME/storage/<run_id>/``) once the join has read it. A failed run keeps it, so
    "re-execute from failure" finds its finished steps' values."""
    run_dir = Path(context.instance.storage_directory()) / context.run_id
    # <run_id>/<step_key>/<output>; the run's compute logs beside them stay
    own = context.get_step_execution_context().step.key  # diagnosis_signals.join_diagnoses
    for step in run_dir.glob(f"{own.rsplit('.', 1)[0]}.*"):
        if step.name != own:
            shutil.rmtree(step, ignore_errors=True)


DESCRIPTION = ("Diagnoses every wrong non-INFRA answer not yet done (or degraded) for this "
               "(run, fingerprint), committing each row as it completes")


def build_diagnosis_signals(names: Names, shards: int = 1) -> Any:
    """The workspace's ``diagnosis_signals``: one step, or the graph of ``shards`` steps."""
    return _sharded(names) if shards > 1 else _one_step(names)


def _one_step(names: Names) -> Any:
    used = {names.resource(r) for r in (n.SESSION, n.SIGNAL_STORE, n.HARNESS_DB,
                                         n.JUDGE_ENDPOINT, n.RUN_OPTIONS)}

    @asset(name="diagnosis_signals", key_prefix=names.key_prefix,
           partitions_def=partitions_of(names), group_name=names.group,
           deps=[names.key("canonical_predictions")], required_resource_keys=used,
           check_specs=[agreement_check_spec(names)],
           description=DESCRIPTION + " (diag.shards: 1, one step; judge_agreement in it).")
    @fails_cleanly
    def diagnosis_signals(context: AssetExecutionContext
                          ) -> Iterator[MaterializeResult | AssetCheckResult]:
        s, options = session_of(context, names), options_of(context, names)
        _check(s, options.refuses_to_wait(context.run.tags), options.refreeze)
        report = _diagnose_shard(context, s, 0, 1)
        yield MaterializeResult(metadata=_joined(
            context, s, [report], options.allowed_degraded(context.run.tags)))
        yield judge_agreement_result(s.partition)

    return diagnosis_signals


def _sharded(names: Names) -> Any:
    """The graph-backed asset (its ops under the workspace's names)."""
    used = {names.resource(n.SESSION), names.resource(n.SIGNAL_STORE),
            names.resource(n.HARNESS_DB)}
    judge = used | {names.resource(n.JUDGE_ENDPOINT)}
    options = used | {names.resource(n.RUN_OPTIONS)}

    @op(name=names.op("check_and_shard"), ins={"canonical_predictions": In(Nothing)},
        out=DynamicOut(int), required_resource_keys=options,
        description="Checks what counts alone can refute, then hands out diag.shards "
                    "diagnosis steps.")
    @fails_cleanly
    def check_and_shard(context: OpExecutionContext) -> Iterator[DynamicOutput[int]]:
        s, options = session_of(context, names), options_of(context, names)
        _check(s, options.refuses_to_wait(context.run.tags), options.refreeze)
        for index in range(s.loaded.config.diag.shards):
            yield DynamicOutput(index, mapping_key=f"shard_{index}")

    @op(name=names.op("diagnose_shard"), required_resource_keys=judge,
        description="Diagnoses leased questions (this shard's stripe first) until none is "
                    "left.")
    @fails_cleanly
    def diagnose_shard(context: OpExecutionContext, shard: int) -> DiagnosisReport:
        s = session_of(context, names)
        return _diagnose_shard(context, s, shard, s.loaded.config.diag.shards)

    @op(name=names.op("join_diagnoses"), out=Out(Nothing), required_resource_keys=options,
        description="Joins the shards' reports; stops the run when an answer is missing or "
                    "more diagnoses stayed degraded than --allow-degraded accepts.")
    @fails_cleanly
    def join_diagnoses(context: OpExecutionContext, reports: list[DiagnosisReport]) -> None:
        allowed = options_of(context, names).allowed_degraded(context.run.tags)
        metadata = _joined(context, session_of(context, names), reports, allowed)
        forget_run(context)  # the shards' reports are read
        context.add_output_metadata(metadata)

    @graph_asset(name="diagnosis_signals", key_prefix=names.key_prefix,
                 partitions_def=partitions_of(names), group_name=names.group,
                 ins={"canonical_predictions": AssetIn(key=names.key("canonical_predictions"),
                                                       dagster_type=Nothing)},
                 description=DESCRIPTION + "; diag.shards steps share the work.")
    def diagnosis_signals(canonical_predictions: None) -> Any:
        reports = check_and_shard(canonical_predictions).map(diagnose_shard).collect()
        return join_diagnoses(reports)

    return diagnosis_signals


def _check(s: Session, no_wait: bool, refreeze: bool) -> None:
    """What counts alone can refute, before anything is paid; ``no_wait``: refuse while
    another run holds leases; a new split after a test look unless ``refreeze``."""
    from split_assets.evaluation.exposure import check_refreeze
    from split_assets.sources.harness_db import predictions_digest

    inputs, partition = s.inputs, s.partition
    with partition.store() as store:
        check_refreeze(store, partition, predictions_digest(inputs.predictions), refreeze)
        check_before_diagnosis(s.loaded.config.video_split, len(inputs.benchmark.videos),
                               inputs.predictions, store.rows(partition.run_id, partition.key))
        if no_wait:
            refuse_if_leased(partition, store, plan_for(inputs.predictions, partition, store))


def _diagnose_shard(context: Any, s: Session, shard: int, count: int) -> DiagnosisReport:
    prefix = f"shard {shard + 1}/{count}: " if count > 1 else ""
    with s.partition.store() as store:
        plan = plan_for(s.inputs.predictions, s.partition, store).shard(shard, count)
        return diagnose(s.judge, s.inputs, s.partition, plan, store,
                        progress=lambda line: context.log.info(prefix + line))


def _joined(context: Any, s: Session, reports: list[DiagnosisReport],
            allowed: int) -> dict[str, Any]:
    """The reports joined: the run stops here when an answer is missing or more diagnoses
    stayed degraded than allowed; else the asset's metadata."""
    partition = s.partition
    with partition.store() as store:
        report = merge_reports(s.inputs.predictions, partition, store, reports)
        rows = [r for r in store.rows(partition.run_id, partition.key) if not r.infra]
        telemetry = store.telemetry(partition.key)
    models = telemetry["models"]
    if len(models) > 1:
        context.log.warning(f"the endpoint reported {len(models)} different models within "
                            f"{partition.key}: {', '.join(models)}")
    stop_unless_settled(partition.key, report, allowed, ALLOW_DEGRADED_TAG)
    context.log.info(f"diagnosed {report.diagnosed} new, {report.already_done} already done"
                     + (f" ({len(reports)} shards)" if len(reports) > 1 else ""))
    return {**md.diagnosis_metadata(s, report, rows, telemetry, allowed),
            "shards": len(reports), **md.agreement_metadata(partition)}
