"""The sensor that keeps the current config's fingerprint offered as a partition: edit the
config, reload the code location, and the launch dialog offers the new fingerprint within
seconds, no CLI needed. An invalid config fails the tick with the one-line error (the
sensor's page shows it); the code location itself always loads.

The sensor stays cheap: its cursor holds the config's path, the files the fingerprint read
(the config, the prompt templates, the judge's source files, the harness db and its log when
reference runs are a component), a signature of their size, times and inode, and the key it
computed; a tick that finds the same config and the same files computes nothing."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dagster import (
    DefaultSensorStatus,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    sensor,
)

from split_assets.errors import SplitAssetsError, environment_error
from split_assets.orchestration.names import Names
from split_assets.orchestration.partitions import partitions_of
from split_assets.settings import LoadedConfig, load_config
from split_assets.store.digest_cache import RACY_NS, signature, wal_of
from split_assets.workspace.fingerprint import compute_fingerprint

if TYPE_CHECKING:
    from split_assets.judge import Judge

REGISTER_INTERVAL_S = 10


class InvalidConfigTick(Exception):
    """The config's one-line error, raised from a sensor tick (no chained traceback)."""


def watched_files(loaded: LoadedConfig, judge: Judge) -> list[str]:
    """The files a fingerprint of this config reads: the config, the prompt templates, the
    judge's source files, and the harness db (and its write-ahead log) when reference runs
    are a component."""
    files = [str(loaded.path)]
    files += [str(loaded.paths.prompts_dir / f"{name}.md") for name in judge.required_templates()]
    files += [str(path) for path in judge.source_files()]
    diag = loaded.config.diag
    if diag.judge == "rules" and diag.context == "answer_only" and diag.reference_runs:
        files += [str(path) for path in wal_of(loaded.paths.harness_db)]
    return files


def current_key(config_path: str) -> tuple[str, list[str]]:
    """The config's fingerprint and the files it read; an invalid config raises its one
    line."""
    from split_assets.judge import build_judge

    try:
        loaded = load_config(config_path)
        judge = build_judge(loaded.config.diag)
        return compute_fingerprint(loaded, judge).key, watched_files(loaded, judge)
    except SplitAssetsError as exc:
        raise InvalidConfigTick(exc.line()) from None
    except Exception as exc:
        mapped = environment_error(exc)
        if mapped is None:
            raise
        raise InvalidConfigTick(mapped.line()) from None


def _unchanged(last: dict[str, Any], config_path: str) -> bool:
    """The last tick's config, and every file its fingerprint read as it was then (size,
    times, inode; not touched within the racy margin of that tick: store/digest_cache.py)."""
    if not last or last.get("config") != config_path:
        return False
    sig, newest = signature(Path(f) for f in last["files"])
    return sig == last["signature"] and newest < last["computed_at_ns"] - RACY_NS


def _evaluate(context: SensorEvaluationContext, names: Names, config_path: str
              ) -> SensorResult | SkipReason:
    partitions = partitions_of(names)
    assert partitions.name is not None
    last: dict[str, Any] = json.loads(context.cursor) if context.cursor else {}
    if _unchanged(last, config_path) and \
            context.instance.has_dynamic_partition(partitions.name, last["key"]):
        return SkipReason(f"partition {last['key']} is registered; the config and the files "
                          "its fingerprint reads are unchanged since the last tick")
    started = time.time_ns()
    key, files = current_key(config_path)
    sig, _ = signature(Path(f) for f in files)
    cursor = json.dumps({"config": config_path, "key": key, "files": files,
                         "signature": sig, "computed_at_ns": started}, sort_keys=True)
    if context.instance.has_dynamic_partition(partitions.name, key):
        return SensorResult(skip_reason=SkipReason(
            f"partition {key} (the current config's fingerprint) is registered"), cursor=cursor)
    context.log.info(f"registering partition {key}: the fingerprint of the current config")
    return SensorResult(dynamic_partitions_requests=[partitions.build_add_request([key])],
                        cursor=cursor)


def build_sensor(names: Names, config_path: str) -> Any:
    """The workspace's ``register_current_fingerprint`` sensor over its config file."""

    @sensor(name=names.sensor, minimum_interval_seconds=REGISTER_INTERVAL_S,
            default_status=DefaultSensorStatus.RUNNING,
            description="Registers the fingerprint of the current config as a partition, so "
                        "the launch dialog offers it after the config changes (recomputed only "
                        "when the config or a file the fingerprint reads changed). An invalid "
                        "config fails the tick with its one-line error.")
    def register_current_fingerprint(context: SensorEvaluationContext
                                     ) -> SensorResult | SkipReason:
        return _evaluate(context, names, config_path)

    return register_current_fingerprint
