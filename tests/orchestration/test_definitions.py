"""The code location as Dagster sees it, snapshot-tested: an accidental graph change shows up
as a diff. Refresh deliberately with ``make update_snapshot``."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import edit_config, kv
from dagster import AssetKey, Definitions, DynamicPartitionsDefinition

from split_assets.definitions import SPLIT_JOB, make_definitions

SNAPSHOT = Path(__file__).parents[1] / "snapshots" / "definitions.json"


REPO_CONFIG = Path(__file__).parents[2] / "config" / "video_split.yaml"


def describe(defs: Definitions | None = None) -> dict:
    """Assets, checks, jobs, sensors, resources and the executor of a code location (default:
    the unprefixed workspace alone)."""
    defs = defs or make_definitions("unused.yaml")
    graph = defs.resolve_asset_graph()
    assets = {}
    for key in sorted(graph.get_all_asset_keys(), key=lambda k: k.to_user_string()):
        node = graph.get(key)
        partitions = node.partitions_def
        assert isinstance(partitions, DynamicPartitionsDefinition)
        assets[key.to_user_string()] = {
            "deps": sorted(k.to_user_string() for k in node.parent_keys),
            "partitions": partitions.name,
            "group": node.group_name,
        }
    checks = {}
    for check_key in sorted(graph.asset_check_keys, key=lambda k: k.to_user_string()):
        spec = graph.get_check_spec(check_key)
        checks[check_key.to_user_string()] = {"asset": check_key.asset_key.to_user_string(),
                                              "blocking": spec.blocking}
    jobs = sorted(j.name for j in defs.resolve_all_job_defs() if not j.name.startswith("__"))
    return {"assets": assets, "checks": checks, "jobs": jobs,
            "sensors": sorted(s.name for s in defs.sensors or []),
            "executor": defs.resolve_job_def(jobs[0]).executor_def.name,
            "resources": sorted(defs.resources or {})}


def location(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *names: str) -> Definitions:
    """The code location (``split_assets.definitions.defs``) with workspaces ``names``
    declared in a temporary folder, each over a copy of the repository's config."""
    from split_assets.app.declared_workspaces import declare
    from split_assets.definitions import defs

    monkeypatch.delenv("SPLIT_ASSETS_CONFIG", raising=False)
    folder = tmp_path / "workspaces"
    monkeypatch.setenv("SPLIT_ASSETS_WORKSPACES", str(folder))
    for name in names:
        config = tmp_path / name / "video_split.yaml"
        config.parent.mkdir()
        shutil.copy(REPO_CONFIG, config)
        declare(name, config, folder)
    return defs()


def test_definitions_match_snapshot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two declared workspaces, as ``dg dev`` loads them: everything under its own names."""
    current = describe(location(tmp_path, monkeypatch, "demo", "videomme"))
    if os.environ.get("UPDATE_SNAPSHOT"):
        SNAPSHOT.write_text(json.dumps(current, indent=2, sort_keys=True) + "\n")
    assert current == json.loads(SNAPSHOT.read_text())


def test_graph_shape() -> None:
    """The unprefixed workspace (``SPLIT_ASSETS_CONFIG``) keeps the names of earlier
    releases."""
    current = describe()
    assert list(current["assets"]) == ["candidate_evaluation", "canonical_predictions",
                                       "diagnosis_signals", "frozen_pools", "infra_t0_signals",
                                       "trainval_selection"]
    assert current["assets"]["candidate_evaluation"]["deps"] == ["frozen_pools"]
    assert {a["partitions"] for a in current["assets"].values()} == {"diag_fingerprint"}
    assert {a["group"] for a in current["assets"].values()} == {"video_split"}
    assert current["assets"]["frozen_pools"]["deps"] == ["trainval_selection"]
    assert set(current["assets"]["trainval_selection"]["deps"]) == {
        "canonical_predictions", "diagnosis_signals", "infra_t0_signals"}
    checks = {key.split(":")[-1]: c for key, c in current["checks"].items()}
    assert set(checks) == {"mcnemar_power", "pools_disjoint", "pools_cover_benchmark",
                           "videos_atomic", "floors_met", "test_within_epsilon",
                           "pools_sha256_matches", "judge_agreement",
                           "reference_runs_informative"}
    assert all(c["blocking"] for c in checks.values())
    assert {name for name, c in checks.items()
            if c["asset"] != "frozen_pools"} == {"judge_agreement"}  # on diagnosis_signals
    assert current["executor"] == "multi_or_in_process_executor"  # in-process by default
    assert current["jobs"] == ["split_pipeline"]
    assert current["sensors"] == ["register_current_fingerprint"]


def test_two_workspaces_with_one_config_are_refused(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from split_assets.app.declared_workspaces import declare
    from split_assets.errors import ConfigError

    location(tmp_path, monkeypatch, "alpha")
    with pytest.raises(ConfigError, match="this config is declared already, as 'alpha'"):
        declare("beta", tmp_path / "alpha" / "video_split.yaml", tmp_path / "workspaces")


def test_split_assets_config_replaces_the_declared_workspaces(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from split_assets.definitions import defs

    location(tmp_path, monkeypatch, "alpha", "beta")
    monkeypatch.setenv("SPLIT_ASSETS_CONFIG", str(REPO_CONFIG))
    assert describe(defs()) == describe()


@pytest.mark.parametrize(("name", "executor"), [("celery", "celery"), ("k8s", "k8s")])
def test_the_same_definitions_load_on_celery_and_k8s(name: str, executor: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from split_assets.definitions import make_definitions

    monkeypatch.setenv("SPLIT_ASSETS_EXECUTOR", name)
    defs = make_definitions("unused.yaml")
    job = defs.resolve_job_def(SPLIT_JOB)
    assert job.executor_def.name == executor
    assert {k.to_user_string() for k in defs.resolve_asset_graph().get_all_asset_keys()} == \
        set(describe()["assets"])  # the same six assets, unchanged


def test_an_unknown_executor_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    from split_assets.definitions import make_definitions
    from split_assets.errors import ConfigError

    monkeypatch.setenv("SPLIT_ASSETS_EXECUTOR", "ray")
    with pytest.raises(ConfigError, match="SPLIT_ASSETS_EXECUTOR='ray' is not an executor"):
        make_definitions("unused.yaml")


def test_diagnosis_shards_run_in_parallel_processes_and_pay_once(
        openai_config: Path, server, run_cli, dagster_home: Path) -> None:  # noqa: ANN001
    """`diag.shards: 3` under the multiprocess executor (`execution: {config: {multiprocess:
    ...}}`, here through `dagster asset materialize`): the three diagnosis steps run at once,
    each in its own process, and share the work through leases: every wrong answer is paid
    for once."""
    import re
    import subprocess
    import sys

    from split_assets.app.session import Session
    from split_assets.diagnosis.plan import wrong_to_diagnose

    edit_config(openai_config, diag={"shards": 3, "concurrency": 2})
    server.latency_s = 0.15  # one shard alone would take seconds: the others start meanwhile
    n_wrong = len(wrong_to_diagnose(Session.open(openai_config).inputs.predictions))
    code, out, err = run_cli("fingerprint", "--config", str(openai_config), "--register")
    assert code == 0, err
    env = dict(os.environ, DAGSTER_HOME=str(dagster_home),
               SPLIT_ASSETS_CONFIG=str(openai_config))
    config = json.dumps({"execution": {"config": {"multiprocess": {"max_concurrent": 4}}}})
    # the diagnosis and what it needs (a process per step costs seconds: not the whole graph)
    proc = subprocess.run([str(Path(sys.executable).parent / "dagster"), "asset", "materialize",
                           "-m", "split_assets.definitions", "--select", "+diagnosis_signals",
                           "--partition", out.splitlines()[0], "--config-json", config],
                          capture_output=True, text=True, env=env, check=False, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    starts = re.findall(r" - (\d+) - diagnosis_signals\.diagnose_shard\[(shard_\d)\] - "
                        r"STEP_START", proc.stderr)
    assert sorted(s for _, s in starts) == ["shard_0", "shard_1", "shard_2"], proc.stderr[-3000:]
    assert len({pid for pid, _ in starts}) == 3  # one process each
    # each shard's last progress line: what it diagnosed; together, each wrong answer once
    done = {k: int(n) for k, n in re.findall(r"shard (\d)/3: diagnosis (\d+)/", proc.stderr)}
    assert len(done) == 3 and sum(1 for n in done.values() if n) >= 2, done  # in parallel
    assert len(server.requests) == n_wrong
    assert "join_diagnoses" in proc.stderr and "RUN_SUCCESS" in proc.stderr


def test_partition_key_must_match_config_fingerprint(small_workspace: Path) -> None:
    from dagster import DagsterInstance

    from split_assets.orchestration.instance import register_partition

    instance = DagsterInstance.get()
    register_partition(instance, "fp-000000000000")
    job = make_definitions(small_workspace).resolve_job_def(SPLIT_JOB)
    result = job.execute_in_process(instance=instance, partition_key="fp-000000000000",
                                    raise_on_error=False)
    assert not result.success
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    # an expected error is the step's one-line failure description, not a stack trace
    message = failure.step_failure_data.user_failure_data.description
    assert "partition fp-000000000000 is not the fingerprint of the current config" in message
    assert failure.step_failure_data.user_failure_data.metadata["exit_code"].value == 2
    assert not instance.get_latest_materialization_event(AssetKey("canonical_predictions"))


def test_each_run_reads_the_config_afresh(small_workspace: Path) -> None:
    """The code location's resource builds a new Workspace per run: a config edited between two
    runs of the same loaded definitions (a long-lived code server) is seen by the second."""
    from dagster import DagsterInstance

    from split_assets.app.session import Session
    from split_assets.orchestration.instance import register_partition

    instance = DagsterInstance.get()
    key = Session.open(small_workspace).partition.key
    register_partition(instance, key)
    job = make_definitions(small_workspace).resolve_job_def(SPLIT_JOB)
    selection = [AssetKey("canonical_predictions")]
    assert job.execute_in_process(instance=instance, partition_key=key,
                                  asset_selection=selection).success
    edit_config(small_workspace, diag={"model": "rules-v2"})  # a new judge: a new fingerprint
    result = job.execute_in_process(instance=instance, partition_key=key,
                                    asset_selection=selection, raise_on_error=False)
    assert not result.success
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    assert f"partition {key} is not the fingerprint" in \
        failure.step_failure_data.user_failure_data.description


def test_frozen_pools_records_its_seven_checks_per_partition(
        small_workspace: Path, run_cli: Callable[..., tuple[int, str, str]]) -> None:
    """frozen_pools evaluates its checks itself (check_specs) before it writes: a run records
    each one's result for its fingerprint's split, and the run carries the judge's tags."""
    from dagster import AssetCheckKey, AssetCheckSeverity, DagsterInstance

    from split_assets.split.invariants import INVARIANTS

    code, out, err = run_cli("run", "--config", str(small_workspace))
    assert code == 0, err
    # the run says which fingerprint and judge it is about (a UI run gets the same tags)
    (run,) = DagsterInstance.get().get_runs(limit=1)
    key, split = kv(out)["fingerprint"], kv(out)["split_id"]
    assert {k: v for k, v in run.tags.items() if k.startswith("split_assets/")} == {
        "split_assets/fingerprint": key, "split_assets/judge": "rules",
        "split_assets/model": "rules-v1", "split_assets/prompt_version": "v1",
        "split_assets/context": "full", "split_assets/diagnosis": "true"}
    keys = [AssetCheckKey(AssetKey("frozen_pools"), name)
            for name in (*INVARIANTS, "mcnemar_power", "reference_runs_informative")]
    latest = DagsterInstance.get().event_log_storage.get_latest_asset_check_execution_by_key(
        keys)
    for check in keys:
        evaluation = latest[check].event.dagster_event.event_specific_data
        if check.name == "mcnemar_power":  # 60 videos: no gain is detectable on validation,
            # a warning (WARN severity, a warning: line) that fails nothing
            assert not evaluation.passed and evaluation.severity == AssetCheckSeverity.WARN
            assert "no gain is detectable on validation" in evaluation.description
            assert "warning: check mcnemar_power: split" in err
        else:
            assert evaluation.passed, check
        assert evaluation.partition == key
        assert evaluation.description.startswith(f"split {split}: ")
