"""The Components split_assets offers (``[tool.dg.project] registry_modules``)."""

from split_assets.shell.component import SplitWorkspace

__all__ = ["SplitWorkspace"]
