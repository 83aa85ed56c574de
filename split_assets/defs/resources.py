"""The one resource: where the config file is. Each run gets a new Workspace (built in
``setup_for_execution``, so nothing is cached in the code server); a CLI command that already
built one lends it to the run it launches, so the inputs are parsed once per command."""

from __future__ import annotations

from pathlib import Path

from dagster import ConfigurableResource, InitResourceContext, ResourceDefinition
from pydantic import PrivateAttr

from split_assets.config import config_path_from_env
from split_assets.workspace import Workspace


class SplitConfigResource(ConfigurableResource):
    """Where the config file is; every asset and check reaches the config through here."""

    config_path: str
    _workspace: Workspace | None = PrivateAttr(default=None)

    def setup_for_execution(self, context: InitResourceContext) -> None:
        self._workspace = Workspace(self.config_path)  # the config is read on first use

    def workspace(self, partition_key: str) -> Workspace:
        """This run's workspace for the partition being run (a stale partition gets the
        judge-free view of ``Workspace.check_partition``)."""
        if self._workspace is None:  # invoked directly, outside a run
            self._workspace = Workspace(self.config_path)
        return self._workspace.check_partition(partition_key)


def build_resources(config_path: Path | str | None = None,
                    workspace: Workspace | None = None) -> dict[str, object]:
    """Resources for a config file (default: ``$SPLIT_ASSETS_CONFIG``), or for a workspace a
    command built already (lent to the run it launches in-process)."""
    if workspace is not None:
        lent = SplitConfigResource(config_path=str(workspace.config_path))
        lent._workspace = workspace
        return {"split_config": ResourceDefinition.hardcoded_resource(lent)}
    path = Path(config_path) if config_path is not None else config_path_from_env()
    return {"split_config": SplitConfigResource(config_path=str(path.absolute()))}
