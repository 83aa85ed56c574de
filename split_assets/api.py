"""What an evolution loop calls from Python (docs/how-to/evaluate-candidates.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def feedback(candidate: str, config: Path | str | None = None) -> dict[str, Any]:
    """Submit a run (already imported, e.g. ``split-assets import predictions --role
    candidate``) to the Ladder on the validation pool: the leaderboard's released accuracy,
    whether it moved, and ``significant``. The same as ``split-assets feedback --candidate ID
    --json``."""
    from split_assets.app.session import feedback_of

    return feedback_of(config, candidate)


def feedback_answers(candidate: str, answers: dict[str, str],
                     config: Path | str | None = None, replace: bool = False) -> dict[str, Any]:
    """The same for answers held in memory (question id -> reply, e.g. ``{"001-1": "B"}``,
    read by the workspace's letter rule): recorded as run ``candidate`` (role candidate,
    ``replace`` to overwrite a run of that id) without a file, then submitted to the Ladder.
    Answers to test questions are a look at test and are refused like an import's."""
    from split_assets.app.session import feedback_of_answers

    return feedback_of_answers(config, candidate, answers, replace)
