"""``judge_agreement``, the blocking check on diagnosis_signals: the judge's tiers against the
human review labels. A one-step diagnosis_signals (``diag.shards: 1``) evaluates it in its own
step (a check_spec); the sharded graph has it as an ``@asset_check`` step. (frozen_pools'
eight checks are its own check_specs: ``pool_checks.py``.)"""


from typing import Any

from dagster import (
    AssetCheckExecutionContext,
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    asset_check,
)

from split_assets.orchestration import names as n
from split_assets.orchestration.failures import fails_cleanly
from split_assets.orchestration.names import Names
from split_assets.orchestration.partitions import partitions_of
from split_assets.orchestration.pool_checks import split_identity
from split_assets.orchestration.resources import session_of
from split_assets.workspace.partition import Partition

AGREEMENT = "judge_agreement"
AGREEMENT_DESCRIPTION = ("Cohen's kappa of the judge's tiers against the human review labels "
                         "(split-assets review): blocking below diag.min_kappa when set, "
                         "otherwise informative.")


def agreement_check_spec(names: Names) -> AssetCheckSpec:
    """judge_agreement as a check_spec of a one-step diagnosis_signals."""
    return AssetCheckSpec(AGREEMENT, asset=names.key("diagnosis_signals"), blocking=True,
                          description=AGREEMENT_DESCRIPTION,
                          partitions_def=partitions_of(names))


def build_agreement_check(names: Names) -> Any:
    """judge_agreement as a step of its own (the sharded diagnosis_signals)."""

    @asset_check(asset=names.key("diagnosis_signals"), name=AGREEMENT, blocking=True,
                 partitions_def=partitions_of(names),
                 required_resource_keys={names.resource(n.SESSION),
                                         names.resource(n.SIGNAL_STORE)},
                 description=AGREEMENT_DESCRIPTION)
    @fails_cleanly
    def judge_agreement(context: AssetCheckExecutionContext) -> AssetCheckResult:
        return judge_agreement_result(session_of(context, names).partition)

    return judge_agreement


def judge_agreement_result(partition: Partition) -> AssetCheckResult:
    from split_assets.review.labels import judge_vs_humans

    minimum = partition.loaded.config.diag.min_kappa
    k = judge_vs_humans(partition)
    if k is None or k.kappa != k.kappa:  # no labels, or kappa undefined (one label only)
        detail = ("no human labels on this run's diagnosed answers yet" if k is None else
                  f"kappa undefined on {k.n} label(s): judge and reviewers used one tier only")
        how = "export a sample with 'split-assets review export', label it, import it"
        return AssetCheckResult(
            check_name=AGREEMENT, passed=minimum is None, severity=AssetCheckSeverity.ERROR,
            description=f"split {partition.split_id}: {detail}"
                        + (f"; diag.min_kappa {minimum} needs labels: {how}" if minimum
                           is not None else f" ({how})"),
            metadata={"labels": k.n if k else 0, **split_identity(partition)})
    detail = (f"kappa {k.kappa:.3f} [{k.low:.3f}, {k.high:.3f}] (95 %, bootstrap over videos) "
              f"on {k.n} human label(s)")
    if minimum is not None:
        detail += f"; diag.min_kappa {minimum}" + (
            "" if k.kappa >= minimum else ": the judge is below it -- improve its prompts or "
                                          "model, or lower diag.min_kappa")
    return AssetCheckResult(
        check_name=AGREEMENT, passed=minimum is None or k.kappa >= minimum,
        severity=AssetCheckSeverity.ERROR,
        description=f"split {partition.split_id}: {detail}",
        metadata={"kappa": round(k.kappa, 4), "ci_low": round(k.low, 4),
                  "ci_high": round(k.high, 4), "labels": k.n,
                  "observed_agreement": round(k.observed, 4),
                  "min_kappa": minimum if minimum is not None else "not set",
                  **split_identity(partition)})
