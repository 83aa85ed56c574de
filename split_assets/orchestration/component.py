"""``SplitWorkspace``: one workspace as a Dagster Component. Its attributes are the config
file (relative to the folder of its ``defs.yaml``) and a name, which prefixes everything the
workspace defines (``orchestration/names.py``). Instances are declared in
``$SPLIT_ASSETS_WORKSPACES`` (``split_assets/app/declared_workspaces.py``) or in any dg project's
``defs/`` folder."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from split_assets.app.declared_workspaces import check_name, resolve_config
from split_assets.orchestration.names import Names
from split_assets.orchestration.workspace_defs import workspace_definitions


class SplitWorkspace(dg.Component, dg.Model, dg.Resolvable):
    """A split_assets workspace: its six assets, checks, job, sensor, dynamic partitions
    definition and resources, under the asset-key prefix ``name``."""

    name: str
    config: str

    def definitions(self, base: Path) -> dg.Definitions:
        """The workspace's definitions, its config resolved against ``base`` (the folder of
        the declaring defs.yaml): a bad name or a missing config is one line."""
        where = str(base / "defs.yaml")
        check_name(self.name, where)
        return workspace_definitions(Names(self.name), resolve_config(self.config, base, where))

    def build_defs(self, context: dg.ComponentLoadContext) -> dg.Definitions:
        return self.definitions(context.path)
