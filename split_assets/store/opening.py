"""Opening the signal store wherever it lives (a SQLite file, or a ``postgresql://`` URL), and
deleting a run's signals when its answers are imported again."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from split_assets.errors import UserError
from split_assets.store.signals import (
    SignalStore,
)

if TYPE_CHECKING:
    pass

from split_assets.store.signals_pg import PgSignalStore, check_store_url, is_store_url


def open_store(location: Path | str, read_only: bool = False, required: bool = False,
               timeout_s: float | None = None) -> SignalStore:
    """The signal store at a path (SQLite) or ``postgresql://`` URL. A read-only open creates
    nothing: a store that does not exist yet reads as empty, or is an error when
    ``required``."""
    if not is_store_url(location):
        path = Path(location)
        return (SignalStore.for_reading(path, required=required) if read_only
                else SignalStore(path, timeout_s=timeout_s))
    url = str(location)
    if read_only:
        check_store_url(url)
        if not required and not PgSignalStore.has_tables(url):
            return SignalStore(Path(":memory:"))
        return PgSignalStore(url, create=False, migrate=False)
    return PgSignalStore(url, timeout_s=timeout_s)


def delete_run_signals(location: Path | str, run_id: str) -> int | None:
    """Delete a run's signal rows and leases (re-imported answers); the rows deleted, or None
    when the store does not exist yet. Refused with one line when it cannot be written."""
    exists = (PgSignalStore.has_tables(str(location)) if is_store_url(location)
              else Path(location).is_file())
    if not exists:
        return None
    try:
        with open_store(location, timeout_s=5) as store:
            return store.delete_run(run_id)
    except UserError as exc:
        raise UserError(f"could not delete the signals of run {run_id!r}: {exc.what}",
                        str(location), "stop the run using the signal store, then import again "
                                       "(nothing was changed)") from None
