"""The sensor offers the current config's fingerprint as a partition; an invalid config fails
its tick with the one-line error, and the code location still loads."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import edit_config
from dagster import DagsterInstance, SensorResult, SkipReason, build_sensor_context

from split_assets.app.session import Session
from split_assets.definitions import SPLIT_JOB, make_definitions
from split_assets.orchestration.instance import register_partition
from split_assets.orchestration.names import Names
from split_assets.orchestration.sensors import InvalidConfigTick, build_sensor


def _tick(config: Path, cursor: str | None = None) -> SensorResult | SkipReason:
    context = build_sensor_context(instance=DagsterInstance.get(), cursor=cursor)
    return build_sensor(Names(), str(config))(context)


def test_registers_the_current_fingerprint_once(small_workspace: Path) -> None:
    key = Session.open(small_workspace).partition.key
    result = _tick(small_workspace)
    assert isinstance(result, SensorResult)
    (request,) = result.dynamic_partitions_requests
    assert (request.partitions_def_name, list(request.partition_keys)) == (
        "diag_fingerprint", [key])
    register_partition(DagsterInstance.get(), key)
    again = _tick(small_workspace)
    assert isinstance(again, SensorResult) and not again.dynamic_partitions_requests
    assert "is registered" in again.skip_reason.skip_message
    edit_config(small_workspace, diag={"prompt_version": "v2"})  # a new judge
    new = Session.open(small_workspace).partition.key
    assert new != key
    assert list(_tick(small_workspace).dynamic_partitions_requests[0].partition_keys) == [new]


def test_an_invalid_config_fails_the_tick_with_one_line(small_workspace: Path) -> None:
    edit_config(small_workspace, video_split={"n_trainval": -5})
    with pytest.raises(InvalidConfigTick) as failed:
        _tick(small_workspace)
    assert "n_trainval" in str(failed.value) and "\n" not in str(failed.value)
    assert failed.value.__cause__ is None and failed.value.__suppress_context__
    # the code location itself loads (the config is read when a run or a tick needs it)
    assert make_definitions(small_workspace).resolve_job_def(SPLIT_JOB) is not None


def test_a_tick_with_unchanged_files_computes_nothing(small_workspace: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The cursor holds the stats of the files the fingerprint read: while they stay as they
    are, a tick computes no fingerprint; an edit of the config (or of a prompt) recomputes."""
    import os

    from split_assets.orchestration import sensors

    monkeypatch.setattr(sensors, "RACY_NS", -10**12)  # files made just now count as settled
    computed: list[str] = []
    real = sensors.compute_fingerprint
    monkeypatch.setattr(sensors, "compute_fingerprint",
                        lambda *a: computed.append("x") or real(*a))
    first = _tick(small_workspace)
    assert isinstance(first, SensorResult) and computed == ["x"]
    key = list(first.dynamic_partitions_requests[0].partition_keys)[0]
    register_partition(DagsterInstance.get(), key)
    again = _tick(small_workspace, first.cursor)
    assert isinstance(again, SkipReason) and "unchanged" in str(again.skip_message)
    assert computed == ["x"]  # nothing recomputed
    text = small_workspace.read_text(encoding="utf-8")
    small_workspace.write_text(text + "\n", encoding="utf-8")  # same judge, touched file
    stat = small_workspace.stat()
    os.utime(small_workspace, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    touched = _tick(small_workspace, first.cursor)
    assert computed == ["x", "x"] and isinstance(touched, SensorResult)
    assert not touched.dynamic_partitions_requests  # the same fingerprint, registered
    edit_config(small_workspace, diag={"prompt_version": "v3"})
    changed = _tick(small_workspace, touched.cursor)
    assert list(changed.dynamic_partitions_requests[0].partition_keys) != [key]
    # the workspace repointed at another config (its old files unchanged): recomputed
    other = small_workspace.parent / "other.yaml"
    other.write_bytes(small_workspace.read_bytes())
    assert not isinstance(_tick(other, changed.cursor), SkipReason)
    assert len(computed) == 4


def test_a_file_changed_within_the_timestamp_margin_is_read_again(small_workspace: Path) -> None:
    """A config written just now may change again within the same timestamp tick: the next
    tick computes anew (git's racy rule), and so registers an edit it could not see."""
    first = _tick(small_workspace)
    key = list(first.dynamic_partitions_requests[0].partition_keys)[0]
    register_partition(DagsterInstance.get(), key)
    again = _tick(small_workspace, first.cursor)
    assert isinstance(again, SensorResult) and "is registered" in str(again.skip_reason)
