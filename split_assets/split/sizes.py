"""The pool sizes the split core and the pre-diagnosis checks both derive, decided here once
(the validation size itself is the settings', ``settings/sections.validation_size``)."""

from __future__ import annotations

from collections.abc import Iterable

from split_assets.split.impossible import NoTestPool


def require_test_pool(n_trainval: int, n_videos: int) -> None:
    """Refuse an ``n_trainval`` that leaves no video for the test pool."""
    if n_trainval >= n_videos:
        raise NoTestPool(n_trainval, n_videos)


def most_wrong_in_validation(wrong_per_video: Iterable[int], n_validation: int) -> int:
    """The most baseline-wrong questions any validation draw of ``n_validation`` videos can
    hold, given each candidate video's count of wrong answers."""
    return sum(sorted(wrong_per_video, reverse=True)[:n_validation])
