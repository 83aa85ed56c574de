"""One workspace's definitions under its names (``orchestration/names.py``): the six assets,
frozen_pools' checks and judge_agreement, the ``split_pipeline`` job, the sensor and the
resources. The executor and loggers are the code location's, set once
(``split_assets/definitions.py``)."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import TYPE_CHECKING

from dagster import AssetSelection, Definitions, PreviewWarning, define_asset_job

from split_assets.orchestration.assets import build_assets
from split_assets.orchestration.checks import build_agreement_check
from split_assets.orchestration.instance import DIAGNOSIS_TAG
from split_assets.orchestration.names import Names
from split_assets.orchestration.pool_checks import PARTITIONED_CHECKS
from split_assets.orchestration.resources import build_resources, loaded_or_error
from split_assets.orchestration.sensors import build_sensor

if TYPE_CHECKING:
    from split_assets.app.session import Session


def workspace_definitions(names: Names, config_path: Path | str | None = None,
                          session: Session | None = None) -> Definitions:
    """A workspace over a config file (default: ``$SPLIT_ASSETS_CONFIG``), or over a session a
    command already built (the CLI's in-process run)."""
    from split_assets.settings import config_path_from_env

    path = (session.loaded.path if session is not None else
            Path(config_path) if config_path is not None else config_path_from_env()).absolute()
    loaded, error = (session.loaded, None) if session is not None else loaded_or_error(path)
    shards = loaded.config.diag.shards if loaded is not None else 1
    job = define_asset_job(
        names.job, selection=AssetSelection.groups(names.group),
        description="Every asset and check of one fingerprint partition.",
        tags={DIAGNOSIS_TAG: "true"})  # what a team instance's run queue limits (README)
    with warnings.catch_warnings():  # wherever they are built (a test resets the filters)
        warnings.filterwarnings("ignore", category=PreviewWarning, message=PARTITIONED_CHECKS)
        assets = build_assets(names, shards)
        # judge_agreement: a step of its own beside the sharded graph, else in its one step
        checks = [build_agreement_check(names)] if shards > 1 else []
    return Definitions(
        assets=assets,
        asset_checks=checks,
        jobs=[job],
        sensors=[build_sensor(names, str(path))],
        resources=build_resources(names, path, session, loaded, error),
    )
