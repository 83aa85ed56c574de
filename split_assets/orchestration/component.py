"""``SplitWorkspace``: one workspace as a Dagster Component. Its attributes are the config
file (relative to the folder of its ``defs.yaml``) and a name, which prefixes everything the
workspace defines (``orchestration/names.py``). Instances are declared in
``$SPLIT_ASSETS_WORKSPACES`` (``split_assets/app/declared_workspaces.py``) or in any dg project's
``defs/`` folder."""

from __future__ import annotations

import re
from pathlib import Path

import dagster as dg

from split_assets.app.declared_workspaces import check_name, resolve_config
from split_assets.orchestration.names import Names
from split_assets.orchestration.workspace_defs import workspace_definitions

# the config ``dg scaffold defs`` writes beside the defs.yaml: it loads as written (dg check
# defs); ``split-assets run`` needs the workspace it names, which an import creates
STARTER_CONFIG = """\
# split_assets workspace config (docs/reference/config.md lists every key). Paths are relative
# to this file's folder. Create the workspace it names from your baseline's files, e.g.
#   split-assets import lmms-eval --samples <date>_samples_videomme.jsonl \\
#     --annotations test-00000-of-00001.parquet --run-id baseline --workspace workspace
# (the import writes workspace/video_split.yaml: point this folder's defs.yaml at it), or
# edit the keys below and run: split-assets run --config <this file>
video_split:
  baseline_run_id: baseline
  n_trainval: 600
  epsilon: 0.02
  report_floor: 30
  val_wrong_min: 150
  val_ratio: 0.3
  seed: 7
  floor_k: {}
  difficulty_field: duration
diag:
  prompt_version: v1
  model: rules-v1
  judge: rules
  context: answer_only
paths:
  questions_dir: workspace/questions
  harness_db: workspace/harness.db
  store_dir: workspace/store
  signals_db: workspace/signals.db
  out_dir: workspace/splits
"""


class WorkspaceScaffolder(dg.Scaffolder):
    """``dg scaffold defs split_assets.components.SplitWorkspace NAME``: a defs.yaml with its
    name (the folder's, as a valid prefix) and config, and a starter config beside it."""

    def scaffold(self, request: dg.ScaffoldRequest) -> None:
        folder = Path(request.target_path)
        name = re.sub(r"[^a-z0-9_]", "_", folder.name.lower()).lstrip("_0123456789")[:40]
        dg.scaffold_component(request, {"name": name or "workspace",
                                        "config": "video_split.yaml"})
        config = folder / "video_split.yaml"
        if not config.exists():
            config.write_text(STARTER_CONFIG, encoding="utf-8")


@dg.scaffold_with(WorkspaceScaffolder)
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
