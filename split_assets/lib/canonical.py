"""The one canonical-JSON writer and the atomic file write used by every output."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any


def canonical_json(value: Any) -> str:
    """Keys sorted, compact separators, UTF-8 text; the same value always gives the same text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False)


def canonical_bytes(value: Any) -> bytes:
    """Canonical JSON as UTF-8 bytes with one final newline (the on-disk form)."""
    return (canonical_json(value) + "\n").encode("utf-8")


def sha256_hex(data: bytes | str) -> str:
    """sha256 hex digest of bytes (strings are UTF-8 encoded)."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    return hashlib.sha256(data).hexdigest()


def digest_of(value: Any) -> str:
    """sha256 of a value's canonical JSON."""
    return sha256_hex(canonical_json(value))


def digest_of_list(items: Iterable[Any]) -> str:
    """``digest_of(list(items))``, hashed item by item: the same digest without the whole
    list's JSON in memory at once (a benchmark of 50,000 questions is tens of MB of it)."""
    hasher = hashlib.sha256(b"[")
    for index, item in enumerate(items):
        if index:
            hasher.update(b",")
        hasher.update(canonical_json(item).encode("utf-8"))
    hasher.update(b"]")
    return hasher.hexdigest()


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder and a rename.

    A reader never sees a half-written file, and a crash leaves either the old file or none.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o666 & ~UMASK)  # mkstemp's 0600 would make outputs private
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        if exc.filename is None:  # a failed write (a full disk) names no file: name ours
            raise OSError(exc.errno, exc.strerror, str(path)) from exc
        raise
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


UMASK = _current_umask()
