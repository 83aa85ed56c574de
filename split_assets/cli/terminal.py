"""What every command module prints with and opens: stderr lines, ``key=value`` lines, and the
command's session (imported when called, not at the top: the CLI loads in milliseconds, so a
Ctrl-C at any moment after the interpreter starts is one line)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from split_assets.app.session import Session


def open_session(config: Path | str | None) -> Session:
    from split_assets.app.session import Session

    return Session.open(config)


def say(message: str) -> None:
    """One line on stderr (what the command did beside its output)."""
    print(message, file=sys.stderr, flush=True)


def print_pairs(lines: list[tuple[str, object]]) -> int:
    for key, value in lines:
        print(f"{key}={value}")
    return 0


def benchmark_name(s: Session) -> str:
    """The workspace's benchmark as its questions files name it (``questions/videomme.json``):
    what the split card and the dataset card state."""
    names = sorted(p.stem for p in s.loaded.paths.questions_dir.glob("*.json"))
    return ", ".join(names) or "?"
