"""The workspaces this code location serves (autoloaded by ``load_from_defs_folder``): one
``SplitWorkspace`` per ``defs.yaml`` in ``$SPLIT_ASSETS_WORKSPACES`` (default
``./workspaces``), or -- when ``SPLIT_ASSETS_CONFIG`` is set -- that one config, unprefixed,
under the names of earlier releases. A broken declaration (a missing config, a duplicate name,
two names for one config) fails the load with its one line (``dg check defs`` shows it)."""

from __future__ import annotations

import os

import dagster as dg

from split_assets.app.declared_workspaces import declared
from split_assets.errors import SplitAssetsError
from split_assets.orchestration.component import SplitWorkspace
from split_assets.orchestration.names import Names
from split_assets.orchestration.workspace_defs import workspace_definitions
from split_assets.settings import CONFIG_ENV_VAR


class WorkspaceDeclarationError(Exception):
    """A broken declaration's one line (no chained traceback)."""


@dg.definitions
def workspaces() -> dg.Definitions:
    config = os.environ.get(CONFIG_ENV_VAR)
    if config:
        return workspace_definitions(Names(None), config)
    try:
        return dg.Definitions.merge(*[
            SplitWorkspace(name=d.name, config=str(d.config)).definitions(d.defs_yaml.parent)
            for d in declared()])
    except SplitAssetsError as exc:
        raise WorkspaceDeclarationError(f"error: {exc.line()}") from None
