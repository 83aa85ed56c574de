"""The run tags a CLI flag sets (or the UI's launchpad): plain strings, no Dagster import, so a
command that never launches a run does not load Dagster."""

from __future__ import annotations

from collections.abc import Mapping

from split_assets.errors import ConfigError

GENERATED_AT_TAG = "split_assets/generated_at"
ALLOW_DEGRADED_TAG = "split_assets/allow_degraded"  # freeze with at most this many degraded
NO_WAIT_TAG = "split_assets/no_wait"  # "1": refuse when another run holds leases


def int_tag(tags: Mapping[str, str], name: str, default: int) -> int:
    """A non-negative integer run tag (set by the CLI's flags, or in the UI's launchpad)."""
    value = tags.get(name)
    if value is None or value == "":
        return default
    if not value.isdigit():
        raise ConfigError(f"run tag {name} is {value!r}, not a non-negative integer",
                          f"run tag {name}", "set it to a number such as 0 or 3")
    return int(value)
