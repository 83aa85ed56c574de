"""The UI path: a real `dagster dev` (webserver + daemon) over the instance the CLI registered
the partition in; a partition launched through GraphQL as the Materialize button does."""

from __future__ import annotations

import json
from pathlib import Path

from dagster import AssetKey, DagsterInstance
from helpers.dagster_ui import (
    check_evaluations,
    launch_partition_materialization,
    start_dagster_dev,
    wait_for_run,
)

from split_assets.cli import main


def test_materialize_button_runs_partition_with_all_checks(small_workspace: Path,
                                                           dagster_home: Path,
                                                           capsys) -> None:  # noqa: ANN001
    assert main(["fingerprint", "--config", str(small_workspace), "--register"]) == 0
    fingerprint = capsys.readouterr().out.splitlines()[0]
    env = {"SPLIT_ASSETS_CONFIG": str(small_workspace), "DAGSTER_HOME": str(dagster_home)}
    with start_dagster_dev(dagster_home, small_workspace.parent, env) as dev:
        run_id = launch_partition_materialization(dev.url, fingerprint)
        status = wait_for_run(dev.url, run_id, timeout_s=240)
        assert status == "SUCCESS", dev.log_tail()
        checks = check_evaluations(dev.url, run_id)
    assert checks == {name: True for name in (
        "mcnemar_power", "pools_disjoint", "pools_cover_benchmark", "videos_atomic",
        "floors_met", "test_within_epsilon", "pools_sha256_matches")}
    event = DagsterInstance.get().get_latest_materialization_event(AssetKey("frozen_pools"))
    assert event is not None and event.run_id == run_id
    metadata = event.asset_materialization.metadata
    pools = Path(metadata["pools_path"].value)
    assert pools.is_file() and pools.parent.parent.name == fingerprint
    assert json.loads(pools.read_bytes())["diag_fingerprint"] == fingerprint
