"""The code location (what ``workspace.yaml``, ``dagster dev -m split_assets.definitions`` and
the CLI load): assembly only; the definitions themselves live in ``split_assets/defs/``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from dagster import AssetSelection, Definitions, define_asset_job

from split_assets.defs.assets import (
    candidate_evaluation,
    canonical_predictions,
    diagnosis_signals,
    frozen_pools,
    infra_t0_signals,
    trainval_selection,
)
from split_assets.defs.checks import judge_agreement
from split_assets.defs.console_log import compact_console_logger
from split_assets.defs.executors import chosen_executor
from split_assets.defs.instance import DIAGNOSIS_TAG
from split_assets.defs.resources import build_resources
from split_assets.defs.sensors import register_current_fingerprint

if TYPE_CHECKING:
    from split_assets.session import Session

SPLIT_JOB = "split_pipeline"

split_pipeline = define_asset_job(
    SPLIT_JOB, selection=AssetSelection.all(),
    description="Every asset and check of one fingerprint partition.",
    tags={DIAGNOSIS_TAG: "true"})  # what a team instance's run queue limits (README)


def make_definitions(config_path: Path | str | None = None,
                     session: Session | None = None,
                     executor: str | None = None) -> Definitions:
    """The code location over one config file (default: ``$SPLIT_ASSETS_CONFIG``), or over a
    session a command already built (the CLI's in-process run); ``executor``: local (the
    default), celery or k8s (default: ``$SPLIT_ASSETS_EXECUTOR``, defs/executors.py)."""
    return Definitions(
        assets=[canonical_predictions, infra_t0_signals, diagnosis_signals, trainval_selection,
                frozen_pools, candidate_evaluation],
        asset_checks=[judge_agreement],
        jobs=[split_pipeline],
        sensors=[register_current_fingerprint],
        resources=build_resources(config_path, session),
        executor=chosen_executor(executor),
        loggers={"console": compact_console_logger},
    )


defs = make_definitions()
