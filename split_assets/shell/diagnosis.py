"""``diagnosis_signals``, a graph-backed asset: one step checks and plans (once, before anything
is paid), ``diag.shards`` steps diagnose (in parallel under the multiprocess, celery or k8s
executor; one after the other in-process), and one step joins their reports before the
selection. The shards share the work through the signal store's leases: none pays for a
question another has claimed or finished."""

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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

from split_assets.diagnosis.plan import check_before_diagnosis, plan_for
from split_assets.diagnosis.report import DiagnosisReport, merge_reports, stop_unless_settled
from split_assets.diagnosis.runner import diagnose, refuse_if_leased
from split_assets.session import Session
from split_assets.shell import metadata as md
from split_assets.shell import names as n
from split_assets.shell.failures import fails_cleanly
from split_assets.shell.names import Names
from split_assets.shell.partitions import partitions_of
from split_assets.shell.resources import options_of, session_of
from split_assets.shell.tags import ALLOW_DEGRADED_TAG


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


def build_diagnosis_signals(names: Names) -> Any:
    """The graph-backed ``diagnosis_signals`` asset of a workspace (its ops under its names)."""
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
        no_wait = options_of(context, names).refuses_to_wait(context.run.tags)
        yield from _check_and_shard(session_of(context, names), no_wait)

    @op(name=names.op("diagnose_shard"), required_resource_keys=judge,
        description="Diagnoses leased questions (this shard's stripe first) until none is "
                    "left.")
    @fails_cleanly
    def diagnose_shard(context: OpExecutionContext, shard: int) -> DiagnosisReport:
        return _diagnose_shard(context, session_of(context, names), shard)

    @op(name=names.op("join_diagnoses"), out=Out(Nothing), required_resource_keys=options,
        description="Joins the shards' reports; stops the run when an answer is missing or "
                    "more diagnoses stayed degraded than --allow-degraded accepts.")
    @fails_cleanly
    def join_diagnoses(context: OpExecutionContext, reports: list[DiagnosisReport]) -> None:
        allowed = options_of(context, names).allowed_degraded(context.run.tags)
        _join_diagnoses(context, session_of(context, names), reports, allowed)

    @graph_asset(name="diagnosis_signals", key_prefix=names.key_prefix,
                 partitions_def=partitions_of(names), group_name=names.group,
                 ins={"canonical_predictions": AssetIn(key=names.key("canonical_predictions"),
                                                       dagster_type=Nothing)},
                 description=(
        "Diagnoses every wrong non-INFRA answer not yet done (or degraded) for this (run, "
        "fingerprint), committing each row as it completes; diag.shards steps share the "
        "work."))
    def diagnosis_signals(canonical_predictions: None) -> Any:
        reports = check_and_shard(canonical_predictions).map(diagnose_shard).collect()
        return join_diagnoses(reports)

    return diagnosis_signals


def _check_and_shard(s: Session, no_wait: bool) -> Iterator[DynamicOutput[int]]:
    inputs, partition = s.inputs, s.partition
    with partition.store() as store:
        # counts alone can show the split is impossible: say so before paying for a diagnosis
        check_before_diagnosis(s.loaded.config.video_split, len(inputs.benchmark.videos),
                               inputs.predictions, store.rows(partition.run_id, partition.key))
        if no_wait:
            refuse_if_leased(partition, store, plan_for(inputs.predictions, partition, store))
    shards = s.loaded.config.diag.shards
    for index in range(shards):
        yield DynamicOutput(index, mapping_key=f"shard_{index}")


def _diagnose_shard(context: OpExecutionContext, s: Session, shard: int) -> DiagnosisReport:
    count = s.loaded.config.diag.shards
    prefix = f"shard {shard + 1}/{count}: " if count > 1 else ""
    with s.partition.store() as store:
        plan = plan_for(s.inputs.predictions, s.partition, store).shard(shard, count)
        return diagnose(s.judge, s.inputs, s.partition, plan, store,
                        progress=lambda line: context.log.info(prefix + line))


def _join_diagnoses(context: OpExecutionContext, s: Session, reports: list[DiagnosisReport],
                    allowed: int) -> None:
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
    forget_run(context)  # the shards' reports are read
    context.add_output_metadata({**md.diagnosis_metadata(s, report, rows, telemetry, allowed),
                                 "shards": len(reports), **md.agreement_metadata(partition)})
