"""The pool sizes every layer derives from the config, decided here once (the config's own
validation, the split core, the pre-diagnosis checks and the importers' starter config all
call these). It imports only the split's errors: anything may use it."""

from __future__ import annotations

from collections.abc import Iterable

from split_assets.split.errors import NoTestPool


def require_test_pool(n_trainval: int, n_videos: int) -> None:
    """Refuse an ``n_trainval`` that leaves no video for the test pool."""
    if n_trainval >= n_videos:
        raise NoTestPool(n_trainval, n_videos)


def validation_size(val_ratio: float, n_trainval: int) -> int:
    """Validation videos out of ``n_trainval``: floor(val_ratio * n_trainval + 0.5) (SPEC §6.2)."""
    return int(val_ratio * n_trainval + 0.5)


def most_wrong_in_validation(wrong_per_video: Iterable[int], n_validation: int) -> int:
    """The most baseline-wrong questions any validation draw of ``n_validation`` videos can
    hold, given each candidate video's count of wrong answers."""
    return sum(sorted(wrong_per_video, reverse=True)[:n_validation])
