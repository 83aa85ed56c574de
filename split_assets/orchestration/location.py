"""What the code location sets once (the executor and the console logger), and one workspace's
definitions alone with them (``make_definitions``: the CLI's in-process run, the tests)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import dagster as dg

from split_assets.orchestration.console_log import compact_console_logger
from split_assets.orchestration.executors import chosen_executor
from split_assets.orchestration.names import Names

SPLIT_JOB = Names().job  # the unprefixed workspace's job: "split_pipeline"

if TYPE_CHECKING:
    from split_assets.app.session import Session


def location_settings(executor: str | None = None) -> dg.Definitions:
    """The executor (local, celery or k8s: ``$SPLIT_ASSETS_EXECUTOR``,
    orchestration/executors.py) and the console logger, once per code location."""
    return dg.Definitions(executor=chosen_executor(executor),
                          loggers={"console": compact_console_logger})


def make_definitions(config_path: Path | str | None = None,
                     session: Session | None = None,
                     executor: str | None = None, name: str | None = None) -> dg.Definitions:
    """One workspace (``name`` None: unprefixed) over a config file (default:
    ``$SPLIT_ASSETS_CONFIG``), or over a session a command already built."""
    from split_assets.orchestration.workspace_defs import workspace_definitions

    return dg.Definitions.merge(workspace_definitions(Names(name), config_path, session),
                                location_settings(executor))
