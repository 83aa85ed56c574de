"""``diagnosis_signals``, a graph-backed asset: one step checks and plans (once, before anything
is paid), ``diag.shards`` steps diagnose (in parallel under the multiprocess, celery or k8s
executor; one after the other in-process), and one step joins their reports before the
selection. The shards share the work through the signal store's leases: none pays for a
question another has claimed or finished."""

import shutil
from collections.abc import Iterator
from pathlib import Path

from dagster import (
    AssetIn,
    DynamicOut,
    DynamicOutput,
    In,
    Nothing,
    OpExecutionContext,
    Out,
    graph_asset,
    op,
)

from split_assets.defs import metadata as md
from split_assets.defs.failures import fails_cleanly
from split_assets.defs.partitions import diag_fingerprint_partitions
from split_assets.defs.resources import SessionResource
from split_assets.defs.tags import ALLOW_DEGRADED_TAG, NO_WAIT_TAG, int_tag
from split_assets.diagnosis.plan import check_before_diagnosis, plan_for
from split_assets.diagnosis.report import DiagnosisReport, merge_reports, stop_unless_settled
from split_assets.diagnosis.runner import diagnose, refuse_if_leased

GROUP = "video_split"


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


@op(ins={"canonical_predictions": In(Nothing)}, out=DynamicOut(int),
    description="Checks what counts alone can refute, then hands out diag.shards diagnosis "
                "steps.")
@fails_cleanly
def check_and_shard(context: OpExecutionContext,
                    session: SessionResource) -> Iterator[DynamicOutput[int]]:
    s = session.session(context.partition_key)
    inputs, partition = s.inputs, s.partition
    with partition.store() as store:
        # counts alone can show the split is impossible: say so before paying for a diagnosis
        check_before_diagnosis(s.loaded.config.video_split, len(inputs.benchmark.videos),
                               inputs.predictions, store.rows(partition.run_id, partition.key))
        if context.run.tags.get(NO_WAIT_TAG) == "1":
            refuse_if_leased(partition, store, plan_for(inputs.predictions, partition, store))
    shards = s.loaded.config.diag.shards
    for index in range(shards):
        yield DynamicOutput(index, mapping_key=f"shard_{index}")


@op(description="Diagnoses leased questions (this shard's stripe first) until none is left.")
@fails_cleanly
def diagnose_shard(context: OpExecutionContext, session: SessionResource,
                   shard: int) -> DiagnosisReport:
    s = session.session(context.partition_key)
    count = s.loaded.config.diag.shards
    prefix = f"shard {shard + 1}/{count}: " if count > 1 else ""
    with s.partition.store() as store:
        plan = plan_for(s.inputs.predictions, s.partition, store).shard(shard, count)
        return diagnose(s.judge, s.inputs, s.partition, plan, store,
                        progress=lambda line: context.log.info(prefix + line))


@op(out=Out(Nothing),
    description="Joins the shards' reports; stops the run when an answer is missing or more "
                "diagnoses stayed degraded than --allow-degraded accepts.")
@fails_cleanly
def join_diagnoses(context: OpExecutionContext, session: SessionResource,
                   reports: list[DiagnosisReport]) -> None:
    s = session.session(context.partition_key)
    partition = s.partition
    allowed = int_tag(context.run.tags, ALLOW_DEGRADED_TAG, 0)
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
    forget_run(context)  # the shards' reports are read
    context.add_output_metadata({**md.diagnosis_metadata(s, report, rows, telemetry, allowed),
                                 "shards": len(reports), **md.agreement_metadata(partition)})


@graph_asset(partitions_def=diag_fingerprint_partitions, group_name=GROUP,
             ins={"canonical_predictions": AssetIn(dagster_type=Nothing)}, description=(
    "Diagnoses every wrong non-INFRA answer not yet done (or degraded) for this (run, "
    "fingerprint), committing each row as it completes; diag.shards steps share the work."))
def diagnosis_signals(canonical_predictions: None) -> None:
    reports = check_and_shard(canonical_predictions).map(diagnose_shard).collect()
    return join_diagnoses(reports)
