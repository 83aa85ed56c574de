"""The Dagster instance on PostgreSQL, as docs/how-to/team.md configures it: run, event
log and schedule storage in a real PostgreSQL server (started for this module from Debian's
binaries), the queued run coordinator with a tag concurrency limit. `split-assets run` and a
UI-style launch (the Materialize button's GraphQL request, through a real `dagster dev`) both
work on it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import kv

from split_assets.orchestration.instance import team_dagster_yaml
from testkit.postgres import Postgres


@pytest.mark.timeout(600)
def test_run_and_ui_launch_on_a_postgres_instance(pg: Postgres, small_workspace: Path,
                                                  tmp_path: Path, run_cli,  # noqa: ANN001
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from dagster import DagsterInstance
    from dagster_postgres import PostgresRunStorage
    from helpers.dagster_ui import launch_partition_materialization, wait_for_run

    url = pg.create_database("dagster_team", driver="psycopg2")
    home = tmp_path / "team_home"
    home.mkdir()
    (home / "dagster.yaml").write_text(team_dagster_yaml(limit=2), encoding="utf-8")
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    monkeypatch.setenv("DAGSTER_POSTGRES_URL", url)  # never in the YAML
    code, out, err = run_cli("run", "--config", str(small_workspace))
    assert code == 0, err
    fingerprint = out.split("fingerprint=")[1].split()[0]
    instance = DagsterInstance.get()
    assert isinstance(instance.run_storage, PostgresRunStorage)
    (first,) = instance.get_runs()
    assert first.status.value == "SUCCESS"
    limits = instance.run_coordinator.get_run_queue_config().tag_concurrency_limits
    assert {"key": "split_assets/diagnosis", "limit": 2} in [dict(x) for x in limits]
    instance.dispose()
    from helpers.dagster_ui import start_dagster_dev

    env = {"SPLIT_ASSETS_CONFIG": str(small_workspace), "DAGSTER_HOME": str(home),
           "DAGSTER_POSTGRES_URL": url}
    with start_dagster_dev(home, small_workspace.parent, env) as dev:
        run_id = launch_partition_materialization(dev.url, fingerprint)
        assert wait_for_run(dev.url, run_id, timeout_s=300) == "SUCCESS", dev.log_tail()
    instance = DagsterInstance.get()
    assert {r.run_id for r in instance.get_runs()} >= {first.run_id, run_id}
    assert not any(home.glob("**/*.db")), "no SQLite storage beside the instance"
    # the test looks every workspace of a baseline shares live in the instance's database
    import psycopg

    from split_assets.store.instance_ledger import instance_postgres_url

    with psycopg.connect(instance_postgres_url(home)) as conn:
        frozen = conn.execute("SELECT workspace, split_id FROM split_assets_frozen").fetchall()
    import socket

    assert frozen == [(f"{socket.gethostname()}:{small_workspace.parent}", kv(out)["split_id"])]
    instance.dispose()
    shutil.rmtree(home / "storage", ignore_errors=True)
