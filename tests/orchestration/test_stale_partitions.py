"""A stale partition (the fingerprint of an earlier config) is re-frozen from the diagnoses
stored under it, with no judge; where a judge would be needed, its first step fails with one
line naming the current partition."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import pytest
from conftest import edit_config, kv
from dagster import AssetCheckKey, AssetKey, DagsterInstance

from split_assets.definitions import SPLIT_JOB, make_definitions
from split_assets.orchestration.instance import register_partition

Cli = Callable[..., tuple[int, str, str]]


def _rows(config: Path, key: str) -> list[tuple]:
    with sqlite3.connect(config.parent / "signals.db") as conn:
        return conn.execute("SELECT * FROM signals WHERE diag_fingerprint = ? ORDER BY "
                            "question_id", (key,)).fetchall()


def _materialize(config: Path, key: str):  # noqa: ANN202 - ExecuteInProcessResult
    instance = DagsterInstance.get()
    register_partition(instance, key)
    job = make_definitions(config).resolve_job_def(SPLIT_JOB)
    return job.execute_in_process(instance=instance, partition_key=key, raise_on_error=False)


def test_a_stale_partition_is_refrozen_from_its_stored_diagnoses(small_workspace: Path,
                                                                 run_cli: Cli) -> None:
    code, out, err = run_cli("run", "--config", str(small_workspace))
    assert code == 0, err
    old = kv(out)["fingerprint"]
    before = _rows(small_workspace, old)
    components = json.loads(Path(kv(out)["manifest"]).read_bytes())["fingerprint_components"]
    # a new judge (a new fingerprint) and a new seed (a new split of the old diagnoses)
    edit_config(small_workspace, diag={"prompt_version": "v2", "judge": "openai",
                                       "model": "m"}, video_split={"seed": 8})
    result = _materialize(small_workspace, old)  # no OPENAI_API_KEY: no judge may be built
    assert result.success
    meta = DagsterInstance.get().get_latest_materialization_event(
        AssetKey("diagnosis_signals")).asset_materialization.metadata
    assert meta["diagnosed_now"].value == 0 and meta["judge"].value == "rules"
    assert _rows(small_workspace, old) == before  # byte-identical signal rows
    frozen = sorted((small_workspace.parent / "splits" / old).glob("*/split_manifest.json"))
    assert len(frozen) == 2  # the first split, and the re-frozen one beside it
    for path in frozen:
        assert json.loads(path.read_bytes())["fingerprint_components"] == components
    # plain verify accepts the re-frozen split: its fingerprint is an earlier one the signal
    # store holds, not the config's (a judge that needs no key, to build the config's)
    edit_config(small_workspace, diag={"judge": "rules", "model": "rules-v1"})
    refrozen = next(p.parent / "pools.json" for p in frozen
                    if json.loads(p.read_bytes())["config"]["video_split"]["seed"] == 8)
    code, out, err = run_cli("verify", str(refrozen), "--config", str(small_workspace))
    assert code == 0, err
    assert "ok   identity_matches" in out and "FAIL" not in out


def test_a_stale_partition_that_would_need_a_judge_fails_in_one_line(small_workspace: Path,
                                                                    run_cli: Cli) -> None:
    code, out, err = run_cli("run", "--config", str(small_workspace))
    assert code == 0, err
    old = kv(out)["fingerprint"]
    with sqlite3.connect(small_workspace.parent / "signals.db") as conn:
        conn.execute("DELETE FROM signals WHERE rowid = (SELECT MIN(rowid) FROM signals WHERE "
                     "infra = 0)")
    edit_config(small_workspace, diag={"prompt_version": "v2"})
    code, out, _ = run_cli("fingerprint", "--config", str(small_workspace))
    current = out.splitlines()[0]
    result = _materialize(small_workspace, old)
    assert not result.success
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    assert failure.step_key == "canonical_predictions"
    line = failure.step_failure_data.user_failure_data.description
    assert f"partition {old} is not the fingerprint of the current config ({current})" in line
    assert "1 wrong answer(s) have no finished diagnosis" in line
    assert f"materialize partition {current}" in line and "\n" not in line


def _statuses(keys: list[str]) -> dict[str, set[str]]:
    """Per partition, the set of statuses its six assets show (what the UI colours)."""
    from split_assets.orchestration.names import Names
    from split_assets.orchestration.partitions import partitions_of

    instance, seen = DagsterInstance.get(), {key: set() for key in keys}
    for asset in ("canonical_predictions", "infra_t0_signals", "diagnosis_signals",
                  "trainval_selection", "frozen_pools", "candidate_evaluation"):
        status = instance.get_status_by_partition(AssetKey(asset), keys,
                                                  partitions_of(Names())) or {}
        for key in keys:
            seen[key].add(status[key].value if status.get(key) else "MISSING")
    return seen


def test_a_failed_stale_partition_is_the_only_one_marked_failed_until_it_succeeds(
        small_workspace: Path, run_cli: Cli) -> None:
    code, out, err = run_cli("run", "--config", str(small_workspace))
    assert code == 0, err
    old = kv(out)["fingerprint"]
    edit_config(small_workspace, diag={"prompt_version": "v2"})
    code, out, err = run_cli("run", "--config", str(small_workspace))
    assert code == 0, err
    current = kv(out)["fingerprint"]
    assert _statuses([old, current]) == {old: {"MATERIALIZED"}, current: {"MATERIALIZED"}}
    where = ("FROM signals WHERE rowid = (SELECT MIN(rowid) FROM signals WHERE infra = 0 "
             "AND diag_fingerprint = ?)")
    with closing(sqlite3.connect(small_workspace.parent / "signals.db")) as conn, conn:
        row = conn.execute(f"SELECT * {where}", (old,)).fetchone()
        conn.execute(f"DELETE {where}", (old,))  # the old partition now needs a judge
    assert not _materialize(small_workspace, old).success
    after_failure = _statuses([old, current])
    assert "FAILED" in after_failure[old] and "MATERIALIZED" not in after_failure[old]
    assert after_failure[current] == {"MATERIALIZED"}  # the other partition stays as it was
    with closing(sqlite3.connect(small_workspace.parent / "signals.db")) as conn, conn:
        conn.execute(f"INSERT INTO signals VALUES ({', '.join('?' * len(row))})", row)
    # its diagnoses are back: no judge is needed, and a success clears the failure
    assert _materialize(small_workspace, old).success
    assert _statuses([old, current]) == {old: {"MATERIALIZED"}, current: {"MATERIALIZED"}}


def test_partitions_list_and_prune(small_workspace: Path, run_cli: Cli) -> None:
    """A fingerprint a config held for a minute is listed as empty and pruned; one with
    materializations is refused unless --force; the current one is never pruned."""
    code, out, err = run_cli("run", "--config", str(small_workspace))
    assert code == 0, err
    old = kv(out)["fingerprint"]
    edit_config(small_workspace, diag={"prompt_version": "v-brief"})  # a new fingerprint
    code, out, _ = run_cli("fingerprint", "--config", str(small_workspace), "--register")
    current = out.splitlines()[0]
    empty = "fp-0123456789ab"
    register_partition(DagsterInstance.get(), empty)
    code, out, err = run_cli("partitions", "list", "--config", str(small_workspace))
    assert code == 0, err
    rows = {line.split("\t")[0]: line.split("\t") for line in out.splitlines()[1:]}
    assert set(rows) == {old, current, empty}
    assert rows[current][1] == "yes" and rows[old][1] == rows[empty][1] == "no"
    assert int(rows[old][2]) >= 5 and int(rows[old][4]) == 1 and int(rows[old][3]) > 0
    assert rows[empty][2:5] == ["0", "0", "0"]

    code, out, err = run_cli("partitions", "prune", "--config", str(small_workspace))
    assert code == 0, err
    assert kv(out)["pruned"] == empty and f"kept={old} (holds data)" in out
    code, out, err = run_cli("partitions", "prune", old, "--config", str(small_workspace))
    assert code == 2 and "holds data" in err and "--force" in err and len(err.splitlines()) == 1
    code, out, err = run_cli("partitions", "prune", current, "--config", str(small_workspace))
    assert code == 2 and "current config's fingerprint" in err
    code, out, err = run_cli("partitions", "prune", old, "--force", "--config",
                             str(small_workspace))
    assert code == 0 and kv(out)["pruned"] == old and "diagnoses stay" in err
    assert list(DagsterInstance.get().get_dynamic_partitions("diag_fingerprint")) == [current]
    assert _rows(small_workspace, old)  # the diagnoses a user paid for are still there


def test_ownerless_assets_are_named_labelled_and_wiped(small_workspace: Path, run_cli: Cli,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """An undeclared config's run leaves unprefixed assets no served workspace owns: listed
    with what they are (on stderr and on the asset's page), wiped on request, files kept."""
    monkeypatch.delenv("SPLIT_ASSETS_CONFIG", raising=False)
    code, out, err = run_cli("run", "--config", str(small_workspace))
    assert code == 0, err
    code, out, err = run_cli("partitions", "list", "--config", str(small_workspace))
    assert code == 0 and "ownerless asset(s)" in err and "frozen_pools" in err, err
    assert "partitions prune --ownerless" in err
    instance = DagsterInstance.get()
    seen = instance.fetch_observations(AssetKey("frozen_pools"), limit=1).records
    assert "prune --ownerless" in seen[0].asset_observation.metadata["what"].value
    run_cli("partitions", "list", "--config", str(small_workspace))  # labelled once
    assert len(instance.fetch_observations(AssetKey("frozen_pools"), limit=5).records) == 1
    code, out, err = run_cli("partitions", "prune", "--ownerless")
    assert code == 0 and "wiped=frozen_pools" in out, err
    assert AssetKey("frozen_pools") not in DagsterInstance.get().get_asset_keys()
    assert list(small_workspace.parent.glob("splits/*/*/pools.json"))  # files stay
    code, out, err = run_cli("partitions", "prune", "--ownerless")
    assert code == 0 and "no ownerless asset" in err


def test_frozen_pools_leads_with_its_summary_and_plots_only_across_partitions(
        small_workspace: Path, run_cli: Cli) -> None:
    from dagster import TableMetadataValue

    def latest() -> dict:
        instance = DagsterInstance.get()
        event = instance.get_latest_materialization_event(AssetKey("frozen_pools"))
        return dict(event.asset_materialization.metadata)

    code, out, err = run_cli("run", "--config", str(small_workspace))
    assert code == 0, err
    meta = latest()
    assert list(meta)[:4] == ["summary", "split_card", "split_card_status", "floors"]
    assert f"**Split {kv(out)['split_id']}**" in meta["summary"].value
    assert "split-assets report" in meta["split_card_status"].value
    assert isinstance(meta["floors"], TableMetadataValue)
    assert "t2_train" not in meta  # one partition: nothing to plot
    check = DagsterInstance.get().event_log_storage.get_latest_asset_check_execution_by_key(
        [AssetCheckKey(AssetKey("frozen_pools"), "floors_met")])
    floors = next(iter(check.values())).event.dagster_event.event_specific_data \
        .metadata["floors"]
    assert isinstance(floors, TableMetadataValue)  # a table, not a JSON string
    edit_config(small_workspace, diag={"prompt_version": "v-brief"})  # a second partition
    code, out, err = run_cli("run", "--config", str(small_workspace))
    assert code == 0, err
    assert isinstance(latest()["t2_train"].value, int)
