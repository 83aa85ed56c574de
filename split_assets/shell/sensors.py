"""The sensor that keeps the current config's fingerprint offered as a partition: edit the
config, reload the code location, and the launch dialog offers the new fingerprint within
seconds, no CLI needed. An invalid config fails the tick with the one-line error (the
sensor's page shows it); the code location itself always loads.

The sensor stays cheap: its cursor holds the size and modification time of every file the
fingerprint read (the config, the prompt templates, the harness db when reference runs are a
component) and the key it computed; a tick whose files are all unchanged computes nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dagster import (
    DefaultSensorStatus,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    sensor,
)

from split_assets.config import LoadedConfig, load_config
from split_assets.errors import SplitAssetsError, environment_error
from split_assets.fingerprint import compute_fingerprint
from split_assets.shell.names import Names
from split_assets.shell.partitions import partitions_of

REGISTER_INTERVAL_S = 10


class InvalidConfigTick(Exception):
    """The config's one-line error, raised from a sensor tick (no chained traceback)."""


def file_stats(paths: list[str]) -> dict[str, list[int]]:
    """Size and mtime (ns) of each file; a missing one is [-1, -1]."""
    stats = {}
    for path in paths:
        try:
            st = Path(path).stat()
            stats[path] = [st.st_size, st.st_mtime_ns]
        except OSError:
            stats[path] = [-1, -1]
    return stats


def watched_files(loaded: LoadedConfig, templates: tuple[str, ...]) -> list[str]:
    """The files a fingerprint of this config reads."""
    files = [str(loaded.path)]
    files += [str(loaded.paths.prompts_dir / f"{name}.md") for name in templates]
    diag = loaded.config.diag
    if diag.judge == "rules" and diag.context == "answer_only" and diag.reference_runs:
        files.append(str(loaded.paths.harness_db))
    return files


def current_key(config_path: str) -> tuple[str, dict[str, list[int]]]:
    """The config's fingerprint and the stats of what it read; an invalid config raises its
    one line."""
    from split_assets.judge import build_judge

    try:
        loaded = load_config(config_path)
        judge = build_judge(loaded.config.diag)
        key = compute_fingerprint(loaded, judge).key
        return key, file_stats(watched_files(loaded, judge.required_templates()))
    except SplitAssetsError as exc:
        raise InvalidConfigTick(exc.line()) from None
    except Exception as exc:
        mapped = environment_error(exc)
        if mapped is None:
            raise
        raise InvalidConfigTick(mapped.line()) from None


def _evaluate(context: SensorEvaluationContext, names: Names, config_path: str
              ) -> SensorResult | SkipReason:
    partitions = partitions_of(names)
    assert partitions.name is not None
    last: dict[str, Any] = json.loads(context.cursor) if context.cursor else {}
    if last and file_stats(list(last["stats"])) == last["stats"] and \
            context.instance.has_dynamic_partition(partitions.name, last["key"]):
        return SkipReason(f"partition {last['key']} is registered; the config and the files "
                          "its fingerprint reads are unchanged since the last tick")
    key, stats = current_key(config_path)
    cursor = json.dumps({"key": key, "stats": stats}, sort_keys=True)
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
