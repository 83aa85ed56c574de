"""The changelog's top release (``CHANGELOG.md``, Keep a Changelog): the version its first
``## [X.Y.Z] - YYYY-MM-DD`` entry names; an ``## [Unreleased]`` section above it is skipped."""

from __future__ import annotations

import re
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[2]
CHANGELOG = CHECKOUT / "CHANGELOG.md"
ENTRY = re.compile(r"^## \[(?P<version>[^\]]+)\](?: - (?P<date>\d{4}-\d{2}-\d{2}))?\s*$",
                   re.MULTILINE)


def top_release(path: Path = CHANGELOG) -> tuple[str, str]:
    """(version, date) of the newest released entry."""
    for m in ENTRY.finditer(path.read_text(encoding="utf-8")):
        if m["version"].lower() != "unreleased":
            assert m["date"], f"{path}: the entry [{m['version']}] has no date"
            return m["version"], m["date"]
    raise AssertionError(f"{path}: no released entry (## [X.Y.Z] - YYYY-MM-DD)")
