"""The installed package's version: ``split-assets --version`` and the manifest's ``made_by``."""

from __future__ import annotations

from importlib import metadata

PACKAGE = "split_assets"


def package_version() -> str:
    """The version pip installed (``pyproject.toml``); ``unknown`` when run from a copy of the
    source that was never installed."""
    try:
        return metadata.version(PACKAGE)
    except metadata.PackageNotFoundError:
        return "unknown"
