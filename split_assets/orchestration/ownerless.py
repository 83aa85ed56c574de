"""Ownerless assets (issue 46): a run of a workspace the code location does not serve (an
unprefixed ``frozen_pools`` from before ``split-assets workspace add``, or a workspace whose
declaration was removed) leaves its asset keys in the instance's catalog, listed with nothing
to say what they are. ``split-assets partitions list`` names them and labels each in the UI
(an observation whose ``what`` says what it is and how to clear it); ``partitions prune
--ownerless`` wipes their event history from the instance. Files, splits and diagnoses stay."""

from __future__ import annotations

import os

from dagster import AssetKey, AssetObservation, DagsterInstance, MetadataValue

from split_assets.app.declared_workspaces import declared
from split_assets.orchestration.names import ASSETS
from split_assets.settings import CONFIG_ENV_VAR

WHAT = ("Ownerless: materialized by a run of a workspace this code location does not serve "
        "(an unprefixed asset from before `split-assets workspace add`, or a workspace whose "
        "declaration was removed). Its split folders and diagnoses are untouched. Clear it "
        "from the catalog with `split-assets partitions prune --ownerless`.")


def served() -> set[str | None]:
    """The asset-key prefixes a workspace owns: every declared workspace's, and the
    unprefixed one's (None) when ``SPLIT_ASSETS_CONFIG`` names it -- a union, so a shell that
    sets the variable for the CLI never makes the declared workspaces look ownerless."""
    owned: set[str | None] = {d.name for d in declared()}
    if os.environ.get(CONFIG_ENV_VAR):
        owned.add(None)
    return owned


def ownerless_keys(instance: DagsterInstance) -> list[AssetKey]:
    """This project's asset keys in the instance that no served workspace owns."""
    owned = served()
    out = []
    for key in instance.get_asset_keys():
        path = key.path
        if path[-1] in ASSETS and len(path) <= 2 and (
                path[0] if len(path) == 2 else None) not in owned:
            out.append(key)
    return sorted(out, key=lambda k: k.to_user_string())


def label(instance: DagsterInstance, keys: list[AssetKey]) -> None:
    """Say on each asset's page what it is (once: an observation)."""
    for key in keys:
        records = instance.fetch_observations(key, limit=1).records
        seen = records[0].asset_observation if records else None
        if seen is not None and "what" in seen.metadata:
            continue
        instance.report_runless_asset_event(
            AssetObservation(key, metadata={"what": MetadataValue.md(WHAT)}))


def wipe(instance: DagsterInstance, keys: list[AssetKey]) -> None:
    instance.wipe_assets(keys)
