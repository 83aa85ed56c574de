"""The Components split_assets offers (``[tool.dg.project] registry_modules``)."""

from split_assets.orchestration.component import SplitWorkspace

__all__ = ["SplitWorkspace"]
