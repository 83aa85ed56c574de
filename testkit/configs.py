"""Editing a workspace's ``video_split.yaml`` in tests and benchmarks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


def edit_config(path: Path, **sections: dict[str, Any]) -> Path:
    """Update keys of a config file in place (``video_split={...}, diag={...}``)."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    for section, values in sections.items():
        data.setdefault(section, {}).update(values)
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path
