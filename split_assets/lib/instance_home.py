"""Where the one Dagster instance lives (``resolve_dagster_home``), without importing
Dagster: the instance's folder also holds what every workspace on it shares (the test looks
of each baseline, ``store/instance_ledger.py``)."""

from __future__ import annotations

import os
from pathlib import Path


def project_root() -> Path | None:
    """The checkout the package runs from (its ``pyproject.toml`` beside the package, as
    ``make`` installs it), or None for a package installed without its checkout."""
    checkout = Path(__file__).resolve().parents[2]
    return checkout if (checkout / "pyproject.toml").is_file() else None


def resolve_dagster_home() -> Path:
    """Where every command finds the one instance, wherever it is started (docs/how-to/
    add-workspace.md, "Which Dagster instance"): ``$DAGSTER_HOME`` (the environment or a
    ``.env``); else the project's ``.dagster_home`` (the checkout the package runs from, which
    ``make ui`` serves); else ``$XDG_STATE_HOME/split-assets/dagster_home`` (default
    ``~/.local/state/...``). Never the working folder unless it is one of these."""
    named = os.environ.get("DAGSTER_HOME")
    if named:
        return Path(named).expanduser().absolute()
    project = project_root()
    if project is not None:
        return project / ".dagster_home"
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state).expanduser().absolute() / "split-assets" / "dagster_home"
