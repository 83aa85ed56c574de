"""The code location (what ``dg dev``, ``workspace.yaml`` and ``dagster dev -m
split_assets.definitions`` load): the definitions autoloaded from ``split_assets/defs/`` (one
``SplitWorkspace`` per declared workspace), with the executor and loggers set once for the
whole location. ``make_definitions`` builds one workspace alone (the CLI's in-process run)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import dagster as dg

from split_assets.shell.console_log import compact_console_logger
from split_assets.shell.executors import chosen_executor
from split_assets.shell.names import Names

SPLIT_JOB = Names().job  # the unprefixed workspace's job: "split_pipeline"

if TYPE_CHECKING:
    from split_assets.session import Session


def location_settings(executor: str | None = None) -> dg.Definitions:
    """The executor (local, celery or k8s: ``$SPLIT_ASSETS_EXECUTOR``, shell/executors.py) and
    the console logger, once per code location."""
    return dg.Definitions(executor=chosen_executor(executor),
                          loggers={"console": compact_console_logger})


def make_definitions(config_path: Path | str | None = None,
                     session: Session | None = None,
                     executor: str | None = None, name: str | None = None) -> dg.Definitions:
    """One workspace (``name`` None: unprefixed) over a config file (default:
    ``$SPLIT_ASSETS_CONFIG``), or over a session a command already built."""
    from split_assets.shell.workspace_defs import workspace_definitions

    return dg.Definitions.merge(workspace_definitions(Names(name), config_path, session),
                                location_settings(executor))


@dg.definitions
def defs() -> dg.Definitions:
    project = Path(__file__).resolve().parents[1]
    if (project / "pyproject.toml").is_file():  # a checkout (make installs it editable)
        loaded = dg.load_from_defs_folder(path_within_project=project)
    else:  # an installed wheel (a celery or k8s image) has no project file: the one module
        from split_assets.defs.workspaces import workspaces

        loaded = workspaces()
    return dg.Definitions.merge(loaded, location_settings())
