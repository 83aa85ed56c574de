"""The validation draw (SPEC §6.2): ``floor(val_ratio * n_trainval + 0.5)`` trainval videos.

Stratified by each video's baseline-wrong count, so validation holds its fair share of wrong
answers (the McNemar power check depends on it); seeded and video-atomic.
"""

from __future__ import annotations

import random
from fractions import Fraction

from split_assets.split.problem import SplitProblem


def draw_validation(problem: SplitProblem, trainval: tuple[str, ...]) -> tuple[str, ...]:
    """The validation videos (sorted); the rest of trainval is train."""
    n_val = problem.n_validation
    strata: dict[int, list[str]] = {}
    for vid in sorted(trainval):
        wrong = sum(not q.correct for q in problem.videos[vid])
        strata.setdefault(wrong, []).append(vid)
    total = len(trainval)
    # Largest remainder allocation with exact fractions: no float rounding anywhere.
    quotas = {k: Fraction(n_val * len(v), total) for k, v in strata.items()} if total else {}
    alloc = {k: int(q) for k, q in quotas.items()}
    left = n_val - sum(alloc.values())
    for k in sorted(quotas, key=lambda k: (-(quotas[k] - int(quotas[k])), k))[:left]:
        alloc[k] += 1
    rng = random.Random(f"validation:{problem.seed}")
    chosen: list[str] = []
    for k in sorted(strata):
        members = list(strata[k])
        rng.shuffle(members)
        chosen.extend(members[: alloc[k]])
    return tuple(sorted(chosen))
