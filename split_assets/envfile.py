"""Settings from ``.env`` files (python-dotenv), as the CLI this project replaces read them.

The environment settings the README documents (``OPENAI_*``, ``SPLIT_ASSETS_*``,
``SSL_CERT_FILE``, ``SSL_CERT_DIR``, ``DAGSTER_HOME``) are read from a ``.env`` in the current
folder and from a ``.env`` beside the config file. Who wins: the process environment, then the
``.env`` beside the config, then the one in the current folder. Other names in a ``.env`` are
left alone (the file may serve other tools). Values are never printed: ``source_of`` tells only
where a setting came from (the dry run lists it).

Under Dagster (``make ui``, ``dagster asset materialize``) Dagster itself first loads the
``.env`` of the folder it was started from over the process environment; to this module those
values are then the environment.
"""

from __future__ import annotations

import os
from pathlib import Path

PREFIXES = ("OPENAI_", "SPLIT_ASSETS_")
NAMES = frozenset({"SSL_CERT_FILE", "SSL_CERT_DIR", "DAGSTER_HOME", "DAGSTER_POSTGRES_URL"})
ENVIRONMENT = "environment"

_set_by_us: dict[str, tuple[str, str]] = {}  # name -> (value, .env path) that this module set


def wanted(name: str) -> bool:
    return name.startswith(PREFIXES) or name in NAMES


def _ours(name: str) -> bool:
    """The current value came from a .env this module read (not from the environment)."""
    entry = _set_by_us.get(name)
    return entry is not None and os.environ.get(name) == entry[0]


def load(folder: Path) -> list[str]:
    """Apply ``folder/.env``: set each wanted name the environment does not set (a value from
    another ``.env`` is replaced). Returns the names it set."""
    path = (folder / ".env").absolute()
    if not path.is_file():
        return []
    from dotenv import dotenv_values

    try:
        values = dotenv_values(path, encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return []  # an unreadable .env is not ours to judge; the settings stay unset
    applied = []
    for name, value in values.items():
        if value is None or not wanted(name):
            continue
        if name in os.environ and not _ours(name):
            continue  # the process environment wins
        os.environ[name] = value
        _set_by_us[name] = (value, str(path))
        applied.append(name)
    return applied


def source_of(name: str) -> str | None:
    """Where a setting's value comes from: ``environment``, a ``.env`` path, or None (unset)."""
    if name not in os.environ:
        return None
    return _set_by_us[name][1] if _ours(name) else ENVIRONMENT


def sources(names: tuple[str, ...]) -> list[tuple[str, str]]:
    """(name, source) for each of ``names`` that is set; names only, never values."""
    return [(n, s) for n in names if (s := source_of(n)) is not None]
