"""The code location (what ``dg dev``, ``workspace.yaml`` and ``dagster dev -m
split_assets.definitions`` load): the definitions autoloaded from ``split_assets/defs/`` (one
``SplitWorkspace`` per declared workspace), with the executor and loggers set once for the
whole location (``orchestration/location.py``, where ``make_definitions`` builds one workspace
alone)."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from split_assets.orchestration.location import SPLIT_JOB, location_settings, make_definitions

__all__ = ["SPLIT_JOB", "defs", "make_definitions"]


@dg.definitions
def defs() -> dg.Definitions:
    project = Path(__file__).resolve().parents[1]
    if (project / "pyproject.toml").is_file():  # a checkout (make installs it editable)
        loaded = dg.load_from_defs_folder(path_within_project=project)
    else:  # an installed wheel (a celery or k8s image) has no project file: the one module
        from split_assets.defs.workspaces import workspaces

        loaded = workspaces()
    return dg.Definitions.merge(loaded, location_settings())
