"""split_assets: a Dagster code location that freezes an outcome-driven, reproducible
train/validation/test split of a video-QA benchmark (README.md). For an evolution loop in
Python: ``split_assets.api.feedback``.

``split_assets.__version__`` is the package's version, set in one place (``pyproject.toml``,
``[project].version``): read from the installed package's metadata on first use (importing
``importlib.metadata`` costs ~30 ms, which no command that never asks should pay), else, for a
source checkout that was never installed, from the ``pyproject.toml`` beside the package."""

from __future__ import annotations

from functools import cache
from pathlib import Path

PACKAGE = "split_assets"
UNKNOWN_VERSION = "unknown"  # a copy of the package with neither metadata nor pyproject.toml


def __getattr__(name: str) -> str:
    if name == "__version__":
        return version()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@cache
def version() -> str:
    """The installed distribution's version; a source checkout's ``pyproject.toml`` when the
    package was never installed; ``unknown`` when neither is there."""
    from importlib import metadata

    try:
        return metadata.version(PACKAGE)
    except metadata.PackageNotFoundError:
        return checkout_version(Path(__file__).resolve().parents[1] / "pyproject.toml")


def checkout_version(pyproject: Path) -> str:
    """``[project].version`` of a checkout's ``pyproject.toml`` that names this package."""
    import tomllib

    try:
        project = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {})
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return UNKNOWN_VERSION
    same = str(project.get("name", "")).replace("-", "_").lower() == PACKAGE
    found = project.get("version")
    return found if same and isinstance(found, str) and found else UNKNOWN_VERSION
