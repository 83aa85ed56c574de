"""What an evolution loop calls from Python (README "Evaluating many candidates")."""

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
