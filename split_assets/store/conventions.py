"""What the signal store's modules share: the ``DONE`` rule, SQLite errors as one line,
timeouts from the environment, timestamps."""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from split_assets.config_keys import config_key
from split_assets.errors import UserError


def env_seconds(name: str, default: float, minimum: float) -> float:
    """A duration from the environment (tests and operators tune waits), checked."""
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not value >= minimum:  # also refuses NaN
        raise UserError(f"{name}={raw!r} is not a number of seconds >= {minimum:g}", name,
                        f"set it to e.g. {default:g}, or unset it")
    return value


BUSY_TIMEOUT_S = 30.0  # SPLIT_ASSETS_DB_TIMEOUT_S overrides it when a store is opened

# "Done": the one rule of which questions need no diagnosis (the dry run's plan, the run, the
# leases). A finished diagnosis: not a T0 INFRA row (an answer that is no longer INFRA, e.g.
# after infra_stop_reasons changed, is judged), and not degraded -- unless the row was degraded
# at or after the parameter (a pass start: retried by the run that wrote it, not by every run).
DONE = "infra = 0 AND (degraded = 0 OR updated_at >= ?)"

_NOW: tuple[int, str] = (-1, "")


def utc_now() -> str:
    """Current UTC time, second precision, ISO 8601 with Z (formatted once per second: it
    stamps several rows of every diagnosis)."""
    global _NOW
    second = int(time.time())
    if _NOW[0] != second:
        _NOW = (second, datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
    return _NOW[1]


def _describe_sqlite(exc: sqlite3.Error, path: Path, waited_s: float = BUSY_TIMEOUT_S) -> str:
    text = str(exc)
    if "locked" in text or "busy" in text:
        return f"{text} (still locked after {waited_s:g} s)"
    if "disk I/O error" in text or "full" in text:
        try:  # SQLite reports a full disk as an I/O error: say which
            stat = os.statvfs(path.parent)
            if stat.f_bavail * stat.f_frsize < 1 << 20:
                return f"{text}: no space left on device (disk full)"
        except OSError:
            pass
    return text


@contextmanager
def sqlite_errors(path: Path, doing: str, waited_s: float = BUSY_TIMEOUT_S) -> Iterator[None]:
    """Turn a SQLite error on the signal store into one line naming the file and the cause
    (``waited_s``: how long a lock was waited for)."""
    try:
        yield
    except sqlite3.Error as exc:
        raise UserError(f"cannot {doing} the signal store: "
                        f"{_describe_sqlite(exc, path, waited_s)}",
                        f"{config_key('signals_db')} {path}",
                        "stop other programs using it, check the file's permissions and free "
                        "space, then run again (finished diagnoses are kept)") from None


