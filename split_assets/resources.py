"""The one place that builds resources, shared by Definitions, the CLI and the tests."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from dagster import ConfigurableResource

from split_assets.config import config_path_from_env, load_config
from split_assets.errors import ConfigError
from split_assets.pipeline import Context, check_partition, make_context

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


class SplitConfigResource(ConfigurableResource):
    """Where the config file is; every asset loads and validates it through here."""

    config_path: str

    def context_for(self, partition_key: str) -> Context:
        """The pipeline context of this config, checked against the partition being run."""
        ctx = make_context(load_config(Path(self.config_path)))
        check_partition(ctx, partition_key)
        return ctx


def build_resources(config_path: Path | str | None = None) -> dict[str, object]:
    """Resources for a config file (default: ``$SPLIT_ASSETS_CONFIG``)."""
    path = Path(config_path) if config_path is not None else config_path_from_env()
    return {"split_config": SplitConfigResource(config_path=str(path.absolute()))}
