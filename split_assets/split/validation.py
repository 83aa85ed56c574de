"""The validation draw (SPEC §6.2): ``floor(val_ratio * n_trainval + 0.5)`` trainval videos.

Stratified by each video's baseline-wrong count, so validation holds its fair share of wrong
answers (the McNemar power check depends on it); seeded and video-atomic. When that fair share
is below ``val_wrong_min`` but trainval holds enough wrong answers, the fewest swaps that reach
it follow: the validation video with the fewest wrong answers for the trainval video with the
most (ties in seeded order).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

from split_assets.split.problem import SplitProblem
from split_assets.split.sizes import most_wrong_in_validation


def draw_validation(problem: SplitProblem, trainval: tuple[str, ...]) -> tuple[str, ...]:
    """The validation videos (sorted); the rest of trainval is train."""
    n_val = problem.n_validation
    wrong = {vid: sum(not q.correct for q in problem.videos[vid]) for vid in trainval}
    strata: dict[int, list[str]] = {}
    for vid in sorted(trainval):
        strata.setdefault(wrong[vid], []).append(vid)
    total = len(trainval)
    # Largest remainder allocation with exact fractions: no float rounding anywhere.
    quotas = {k: Fraction(n_val * len(v), total) for k, v in strata.items()} if total else {}
    alloc = {k: int(q) for k, q in quotas.items()}
    left = n_val - sum(alloc.values())
    for k in sorted(quotas, key=lambda k: (-(quotas[k] - int(quotas[k])), k))[:left]:
        alloc[k] += 1
    rng = random.Random(f"validation:{problem.selection.seed}")
    chosen: list[str] = []
    rank: dict[str, int] = {}
    for k in sorted(strata):
        members = list(strata[k])
        rng.shuffle(members)
        rank.update((vid, i) for i, vid in enumerate(members))
        chosen.extend(members[: alloc[k]])
    have = sum(wrong[v] for v in chosen)
    if have < problem.validation.val_wrong_min:
        inside = sorted(chosen, key=lambda v: (wrong[v], -rank[v]))
        outside = sorted(set(trainval) - set(chosen), key=lambda v: (-wrong[v], rank[v]))
        for out_v, in_v in zip(inside, outside, strict=False):
            if have >= problem.validation.val_wrong_min or wrong[in_v] <= wrong[out_v]:
                break
            chosen[chosen.index(out_v)] = in_v
            have += wrong[in_v] - wrong[out_v]
    return tuple(sorted(chosen))


def max_validation_wrong(problem: SplitProblem, trainval: tuple[str, ...]) -> int:
    """The most baseline-wrong questions any validation draw of this size can hold."""
    return most_wrong_in_validation((sum(not q.correct for q in problem.videos[v])
                                     for v in trainval), problem.n_validation)


@dataclass(frozen=True)
class PowerVerdict:
    """The McNemar power check's verdict on a split: validation's baseline-wrong questions
    against ``val_wrong_min`` (0: the check is off), and the most any draw of validation's size
    from the same trainval could hold."""

    val_wrong: int
    needed: int
    reachable: int
    n_validation: int

    @property
    def passed(self) -> bool:
        return self.val_wrong >= self.needed


def power_verdict(problem: SplitProblem, videos: Mapping[str, Sequence[str]],
                  needed: int) -> PowerVerdict:
    """The verdict on the pools' ``videos`` (train, validation) of ``problem`` (the one
    decision both the freeze and the ``mcnemar_power`` check make)."""
    validation = videos["validation"]
    val_wrong = sum(not q.correct for v in validation for q in problem.videos[v])
    reachable = max_validation_wrong(problem, tuple(sorted([*videos["train"], *validation])))
    return PowerVerdict(val_wrong, needed, reachable, len(validation))
