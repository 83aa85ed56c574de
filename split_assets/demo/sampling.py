"""Seeded draws and exact apportionment shared by the generator's stages.

Every draw goes through a ``numpy.random.Generator`` passed in by the caller, so the output
depends only on the seed and on the order of the calls.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np


def apportion(weights: Sequence[int], total: int) -> list[int]:
    """Largest-remainder apportionment of ``total`` over integer ``weights`` (exact arithmetic)."""
    wsum = sum(weights)
    if total <= 0 or wsum <= 0:
        return [0] * len(weights)
    base = [w * total // wsum for w in weights]
    rem = [w * total % wsum for w in weights]
    order = sorted(range(len(weights)), key=lambda i: (-rem[i], i))
    for i in order[: total - sum(base)]:
        base[i] += 1
    return base


def round_half_up(x: float) -> int:
    """``x`` rounded to the nearest integer, halves up."""
    return int(math.floor(x + 0.5))


def pick(rng: np.random.Generator, items: Sequence[Any]) -> Any:
    """One item, uniformly (one draw)."""
    return items[int(rng.integers(len(items)))]


def sample(rng: np.random.Generator, items: Sequence[Any], k: int) -> list[Any]:
    """``k`` distinct items in random order (one permutation of all items)."""
    idx = rng.permutation(len(items))[:k]
    return [items[int(i)] for i in idx]


def weighted_index(rng: np.random.Generator, weights: Sequence[float]) -> int:
    """An index drawn with probability proportional to its weight (one draw); weights <= 0
    are never drawn."""
    total = float(sum(weights))
    r = float(rng.random()) * total
    acc = 0.0
    last = 0
    for i, w in enumerate(weights):
        if w <= 0:
            continue
        last = i
        acc += w
        if r < acc:
            return i
    return last
