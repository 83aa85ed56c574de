"""A cache of the digests of inputs that are slow to digest and rarely change (the traces in
the harness db, the video trees), so a warm run does not parse and hash them again.

An entry is used only while every file it was computed from has the same size, modification
time, change time and inode as when it was computed (the change time cannot be set back by a
user: any write moves it), and -- git's "racy clean" rule -- only when the newest of those times
is older than the computation by more than the file system's timestamp granularity (a file
written in the same tick as it was read may have changed unseen). Anything else recomputes. A
cache that cannot be read or written is ignored: it only ever saves time.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from split_assets.lib.canonical import atomic_write_bytes, canonical_bytes, digest_of

RACY_NS = 2_000_000_000  # coarser than any file system's timestamps
MAX_ENTRIES = 8  # the most recent input sets (a workspace rarely has more than a few)


def signature(paths: Iterable[Path]) -> tuple[str, int]:
    """A digest of the files' (path, size, mtime, ctime, inode), and their newest time (ns);
    a missing file counts as such."""
    stats, newest = [], 0
    for path in paths:
        try:
            st = path.stat()
        except OSError:
            stats.append([str(path), -1])
            continue
        stats.append([str(path), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino])
        newest = max(newest, st.st_mtime_ns, st.st_ctime_ns)
    return digest_of(stats), newest


def cached_digests(cache_file: Path | None, key: str, paths: list[Path],
                   compute: Callable[[], dict[str, str]]) -> dict[str, str]:
    """``compute()``, or the digests an earlier call stored under ``key`` for these very files
    (``cache_file`` None: always computed, nothing stored)."""
    if cache_file is None:
        return compute()
    before, newest = signature(paths)
    entries = _read(cache_file)
    entry = entries.get(key)
    if entry and entry.get("signature") == before and \
            newest < entry.get("computed_at_ns", 0) - RACY_NS:
        return dict(entry["digests"])
    started = time.time_ns()
    digests = compute()
    after, _ = signature(paths)
    if after == before:  # nothing moved while it was computed
        entries[key] = {"signature": before, "computed_at_ns": started, "digests": digests}
        recent = sorted(entries.items(), key=lambda kv: kv[1]["computed_at_ns"])[-MAX_ENTRIES:]
        with contextlib.suppress(OSError):
            atomic_write_bytes(cache_file, canonical_bytes(dict(recent)))
    return digests


def _read(cache_file: Path) -> dict[str, dict]:
    try:
        doc = json.loads(cache_file.read_bytes())
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def wal_of(db: Path) -> list[Path]:
    """A SQLite file and its write-ahead log (a committed write may touch only the log)."""
    return [db, Path(os.fspath(db) + "-wal")]
