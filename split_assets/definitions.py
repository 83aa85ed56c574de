"""The code location: assembly only."""

from pathlib import Path

from dagster import AssetSelection, Definitions, define_asset_job, in_process_executor

from split_assets.assets import (
    candidate_evaluation,
    canonical_predictions,
    diagnosis_signals,
    frozen_pools,
    infra_t0_signals,
    trainval_selection,
)
from split_assets.checks import mcnemar_power, split_invariants
from split_assets.console_log import compact_console_logger
from split_assets.resources import build_resources

SPLIT_JOB = "split_pipeline"

split_pipeline = define_asset_job(
    SPLIT_JOB, selection=AssetSelection.all(),
    description="Every asset and check of one fingerprint partition.")



def make_definitions(config_path: Path | str | None = None) -> Definitions:
    """The code location over one config file (default: ``$SPLIT_ASSETS_CONFIG``)."""
    return Definitions(
        assets=[canonical_predictions, infra_t0_signals, diagnosis_signals, trainval_selection,
                frozen_pools, candidate_evaluation],
        asset_checks=[split_invariants, mcnemar_power],
        jobs=[split_pipeline],
        resources=build_resources(config_path),
        executor=in_process_executor,
        loggers={"console": compact_console_logger},
    )


defs = make_definitions()
