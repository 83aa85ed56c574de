"""The sensor that keeps the current config's fingerprint offered as a partition: edit the
config, reload the code location, and the launch dialog offers the new fingerprint within
seconds, no CLI needed. An invalid config fails the tick with the one-line error (the
sensor's page shows it); the code location itself always loads."""

from __future__ import annotations

from dagster import (
    DefaultSensorStatus,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    sensor,
)

from split_assets.config import load_config
from split_assets.defs.partitions import diag_fingerprint_partitions
from split_assets.defs.resources import SessionResource
from split_assets.errors import SplitAssetsError, environment_error
from split_assets.fingerprint import compute_fingerprint

REGISTER_INTERVAL_S = 10


class InvalidConfigTick(Exception):
    """The config's one-line error, raised from a sensor tick (no chained traceback)."""


@sensor(minimum_interval_seconds=REGISTER_INTERVAL_S, default_status=DefaultSensorStatus.RUNNING,
        description="Registers the fingerprint of the current config as a partition, so the "
                    "launch dialog offers it after the config changes. An invalid config "
                    "fails the tick with its one-line error.")
def register_current_fingerprint(context: SensorEvaluationContext,
                                 session: SessionResource) -> SensorResult | SkipReason:
    try:
        # the config read anew each tick: the code server is long-lived, the config is not
        key = compute_fingerprint(load_config(session.config_path)).key
    except SplitAssetsError as exc:
        raise InvalidConfigTick(exc.line()) from None
    except Exception as exc:
        mapped = environment_error(exc)
        if mapped is None:
            raise
        raise InvalidConfigTick(mapped.line()) from None
    name = diag_fingerprint_partitions.name
    assert name is not None
    if context.instance.has_dynamic_partition(name, key):
        return SkipReason(f"partition {key} (the current config's fingerprint) is registered")
    context.log.info(f"registering partition {key}: the fingerprint of the current config")
    return SensorResult(dynamic_partitions_requests=[
        diag_fingerprint_partitions.build_add_request([key])])
