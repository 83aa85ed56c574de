"""The sensor offers the current config's fingerprint as a partition; an invalid config fails
its tick with the one-line error, and the code location still loads."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import edit_config
from dagster import DagsterInstance, SensorResult, SkipReason, build_sensor_context

from split_assets.definitions import SPLIT_JOB, make_definitions
from split_assets.defs.instance import register_partition
from split_assets.defs.resources import SessionResource
from split_assets.defs.sensors import InvalidConfigTick, register_current_fingerprint
from split_assets.session import Session


def _tick(config: Path) -> SensorResult | SkipReason:
    context = build_sensor_context(
        instance=DagsterInstance.get(),
        resources={"session": SessionResource(config_path=str(config))})
    return register_current_fingerprint(context)


def test_registers_the_current_fingerprint_once(small_workspace: Path) -> None:
    key = Session.open(small_workspace).partition.key
    result = _tick(small_workspace)
    assert isinstance(result, SensorResult)
    (request,) = result.dynamic_partitions_requests
    assert (request.partitions_def_name, list(request.partition_keys)) == (
        "diag_fingerprint", [key])
    register_partition(DagsterInstance.get(), key)
    assert isinstance(_tick(small_workspace), SkipReason)
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
