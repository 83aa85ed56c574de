"""Typed errors of the core. The CLI turns them into one line on stderr and an exit code."""

from __future__ import annotations

import errno
import sqlite3


class SplitAssetsError(Exception):
    """Base of every expected error: rendered as ``error: <what> (<where>): <how to fix>``."""

    exit_code = 1

    def __init__(self, what: str, where: str = "", fix: str = "",
                 figures: dict[str, object] | None = None) -> None:
        self.what = what
        self.where = where
        self.fix = fix
        self.figures = figures or {}  # numbers for the Dagster UI's failure metadata
        super().__init__(self.line())

    def line(self) -> str:
        """The one-line rendering shown to users."""
        text = self.what
        if self.where:
            text += f" ({self.where})"
        if self.fix:
            text += f": {self.fix}"
        return text


class UserError(SplitAssetsError):
    """Something the user must fix in config, input or environment (exit 2)."""

    exit_code = 2


class ConfigError(UserError):
    """The config file is missing, malformed or invalid."""


class InputError(UserError):
    """An input (benchmark, harness db, trees, skills, prompts) is missing or malformed."""


class InfeasibleSplitError(UserError):
    """The floors or epsilon of the split cannot be met."""


class RunFailure(SplitAssetsError):
    """A run failed for a reason other than user input (exit 1)."""

    exit_code = 1


class Interrupted(SplitAssetsError):
    """Ctrl-C (SIGINT): exit 130, finished diagnoses kept."""

    exit_code = 130


class Terminated(Interrupted):
    """SIGTERM (kill, a CI timeout, systemd, Kubernetes, Dagster's run termination): handled
    as a Ctrl-C, exit 143."""

    exit_code = 143


def interrupted(terminated: bool = False) -> Interrupted:
    """The one line of a Ctrl-C, or of a SIGTERM when ``terminated`` (here, with nothing to
    import: a signal during an import can leave that module half-made for whoever imports it
    next)."""
    fix = "finished diagnoses are kept; run the same command again to resume without paying twice"
    if terminated:
        return Terminated("terminated", "SIGTERM", fix)
    return Interrupted("interrupted", "Ctrl-C", fix)


class ReportedError(SplitAssetsError):
    """An error already rendered as one line elsewhere (a failed Dagster step), with its exit
    code carried along."""

    def __init__(self, line: str, exit_code: int) -> None:
        super().__init__(line)
        self.exit_code = exit_code


_FILE_SYSTEM_ERRNOS = frozenset(getattr(errno, name) for name in (
    "EACCES", "EPERM", "EROFS", "ENOSPC", "EDQUOT", "EFBIG", "EISDIR", "ENOTDIR", "EEXIST",
    "ENOENT", "EMFILE", "ENFILE", "EIO") if hasattr(errno, name))


def environment_error(exc: BaseException) -> UserError | None:
    """The one-line error of an operating-system or SQLite failure the user must fix
    (permissions, a full disk, a path that is a folder, a lock that did not clear), with the
    OS's own reason; None for anything else."""
    if isinstance(exc, OSError) and not isinstance(exc, ConnectionError | TimeoutError) and (
            exc.filename is not None or exc.errno in _FILE_SYSTEM_ERRNOS):
        reason = exc.strerror or str(exc)
        where = exc.filename if exc.filename is not None else "file system"
        hints = {
            "EACCES": "give this user write permission there, or point the config elsewhere",
            "EPERM": "give this user write permission there, or point the config elsewhere",
            "EROFS": "the file system is read-only: point the config at a writable folder",
            "ENOSPC": "free some disk space, then run again (finished diagnoses are kept)",
            "EDQUOT": "free some disk space, then run again (finished diagnoses are kept)",
            "EFBIG": "the file grew past the allowed size: raise the limit or free space",
            "EISDIR": "the path names a folder: name a file",
            "ENOTDIR": "a part of the path is a file, not a folder: fix the path",
            "EEXIST": "the path exists already: move it away or name another",
        }
        code = errno.errorcode.get(exc.errno or -1, "")
        return UserError(f"{reason} [{code or type(exc).__name__}]", str(where),
                         hints.get(code, "fix the file or folder named, then run again"))
    if isinstance(exc, sqlite3.Error):
        text = str(exc)
        if "locked" in text or "busy" in text:
            return UserError(f"database is locked: {text}", "SQLite",
                             "stop the other program using it, then run again")
        if "disk" in text or "full" in text:
            return UserError(f"SQLite: {text}", "SQLite",
                             "free some disk space, then run again (finished diagnoses are kept)")
        if "readonly" in text or "unable to open" in text:
            return UserError(f"SQLite: {text}", "SQLite",
                             "check the database file's and its folder's permissions")
    return None
