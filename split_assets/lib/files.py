"""Small file-system helpers shared by the core: reading user text files, process liveness."""

from __future__ import annotations

import os
from pathlib import Path

from split_assets.errors import UserError


def read_utf8(path: Path, what: str, error: type[UserError], fix: str = "save it as UTF-8"
              ) -> str:
    """A user's UTF-8 text file; undecodable or unreadable is ``error`` naming the file."""
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{what} file is not UTF-8 text (byte {exc.start}: {exc.reason})",
                    str(path), fix) from None
    except OSError as exc:
        raise error(f"{what} file cannot be read: {exc.strerror or exc}", str(path),
                    "check the file's permissions") from None


def pid_alive(pid: int) -> bool:
    """Whether a process of this pid namespace is alive (one that is not ours counts too)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
