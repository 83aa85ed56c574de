"""Where a run will write, checked before anything starts (``preflight``): the signal store's
file and the split folder must be creatable or writable by this user, and no part of either
path may be a file -- so a run never starts its steps only to fail at its first write. Only
the file system is asked; nothing is created (the dry run writes nothing). A full disk or a
lock held by another program can only show when writing, and is refused then."""

from __future__ import annotations

import os
from pathlib import Path

from split_assets.config_keys import config_key
from split_assets.errors import InputError
from split_assets.store.signals_pg import is_store_url


def check_outputs(signals_db: Path | str, out_dir: Path) -> None:
    """The signal store (a file path; a PostgreSQL URL is checked when it is opened) and the
    split folder (``paths.out_dir``)."""
    if not is_store_url(signals_db):
        store = Path(signals_db)
        if store.is_dir():
            raise InputError(f"the signal store is a folder: {store}", config_key("signals_db"),
                             f"point {config_key('signals_db')} at a file (it is created on "
                             "first use)")
        if store.exists():
            _writable(store, config_key("signals_db"), "the signal store")
        else:
            _creatable(store, config_key("signals_db"), "the signal store")
    if out_dir.exists() and not out_dir.is_dir():
        raise InputError(f"the split folder is a file, not a folder: {out_dir}",
                         config_key("out_dir"), "move the file away, or point the config "
                                                "at a folder")
    if out_dir.is_dir():
        _writable(out_dir, config_key("out_dir"), "the split folder")
    else:
        _creatable(out_dir, config_key("out_dir"), "the split folder")


def _writable(path: Path, key: str, what: str) -> None:
    if not os.access(path, os.W_OK | (os.X_OK if path.is_dir() else 0)):
        raise InputError(f"permission denied: {what} {path} is not writable by this user", key,
                         "give this user write permission there, or point the config "
                         "elsewhere")


def _creatable(path: Path, key: str, what: str) -> None:
    """The nearest existing folder above ``path`` must be a folder this user may write in."""
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise InputError(f"a part of the path of {what} is a file, not a folder: {parent}",
                         key, "fix the path, or move that file away")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InputError(f"permission denied: {what} {path} cannot be created in {parent}",
                         key, "give this user write permission there, or point the config "
                              "elsewhere")
