"""The persistent Dagster instance shared by the CLI, ``dagster dev`` and the tests."""

from __future__ import annotations

import os
from pathlib import Path

from dagster import DagsterInstance

from split_assets.partitions import diag_fingerprint_partitions

DAGSTER_YAML = "telemetry:\n  enabled: false\n"


def dagster_home() -> Path:
    """``$DAGSTER_HOME``, or an absolute ``./.dagster_home`` when unset (set in the env)."""
    home = Path(os.environ.get("DAGSTER_HOME") or Path(".dagster_home").absolute())
    home.mkdir(parents=True, exist_ok=True)
    config = home / "dagster.yaml"
    if not config.exists():
        config.write_text(DAGSTER_YAML, encoding="utf-8")
    os.environ["DAGSTER_HOME"] = str(home)
    return home


def get_instance() -> DagsterInstance:
    dagster_home()
    return DagsterInstance.get()


def register_partition(instance: DagsterInstance, key: str) -> bool:
    """Add the fingerprint partition if absent; True when it was new."""
    name = diag_fingerprint_partitions.name
    assert name is not None
    if instance.has_dynamic_partition(name, key):
        return False
    instance.add_dynamic_partitions(name, [key])
    return True
