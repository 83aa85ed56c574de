"""The package's version: ``split-assets --version`` and the manifest's ``made_by``; the same
as ``split_assets.__version__`` (set once, in ``pyproject.toml``)."""

from __future__ import annotations

from split_assets import PACKAGE, version

__all__ = ["PACKAGE", "package_version"]


def package_version() -> str:
    """The version pip installed (``pyproject.toml``); a never-installed source checkout's
    ``pyproject.toml``; ``unknown`` for a bare copy of the package."""
    return version()
