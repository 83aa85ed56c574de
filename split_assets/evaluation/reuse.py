"""Reusing a frozen pool honestly across many candidates (issue 24's statistics; plain
functions over answers, no store, no Dagster).

- ``Ladder``: Blum & Hardt's parameter-free Ladder ("The Ladder: A Reliable Leaderboard for
  Machine Learning Competitions", ICML 2015, Algorithm 2), on the validation pool. The
  leaderboard starts at the baseline; a submission moves it only when its loss (the share of
  questions answered wrong) is below the current best's by more than one standard error of
  the paired difference on the same questions -- here clustered by video (Obuchowski's
  between-video variance, ``mcnemar.cluster_adjusted``), as a video's questions are not
  independent -- and the released score is the leaderboard's loss rounded to 1/n (n the pool's
  questions), never the submission's own.
- ``one_sided_p``: the cluster-adjusted test that a candidate is more accurate than a
  reference, one-sided (the z of the same variance); a loop that asks it of every submission
  tests each at alpha / budget (Bonferroni over the declared submission budget), valid however
  the submissions were chosen.
- ``holm``: Holm's (1979) step-down adjusted p-values of a family.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from statistics import NormalDist

from split_assets.evaluation.mcnemar import cluster_adjusted

_NORMAL = NormalDist()


def _clusters(videos: Sequence[str], a: Sequence[bool], b: Sequence[bool]
              ) -> list[tuple[int, int, int]]:
    per_video: dict[str, list[int]] = {}
    for video, x, y in zip(videos, a, b, strict=True):
        cell = per_video.setdefault(video, [0, 0, 0])
        cell[0] += 1
        cell[1] += int(x)
        cell[2] += int(y)
    return [(n, x, y) for n, x, y in per_video.values()]


def paired_se(videos: Sequence[str], a: Sequence[bool], b: Sequence[bool]) -> float:
    """Standard error of the difference of two runs' accuracies (equally: of their losses) on
    the same questions, clustered by video; 0 when no video moved."""
    _, se = cluster_adjusted(_clusters(videos, a, b))
    return 0.0 if math.isnan(se) else se


def one_sided_p(videos: Sequence[str], reference: Sequence[bool],
                candidate: Sequence[bool]) -> float:
    """P-value of "the candidate is more accurate than the reference" (cluster-adjusted z,
    one-sided). No discordant video: 1 when the accuracies are equal, else 0 or 1 by sign."""
    n = len(reference)
    gain = (sum(candidate) - sum(reference)) / n if n else 0.0
    se = paired_se(videos, reference, candidate)
    if se <= 0.0:
        return 0.0 if gain > 0 else 1.0
    return 1.0 - _NORMAL.cdf(gain / se)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm's adjusted p-values, in the order given (monotone in the sorted order, at most
    1): the family-wise error rate stays at alpha for any dependence between the tests."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        adjusted[i] = running
    return adjusted


@dataclass(frozen=True)
class LadderStep:
    """What one submission gets back: the released leaderboard score (a loss), whether the
    leaderboard moved to the submission, and the threshold it had to beat."""

    released_loss: float
    moved: bool
    threshold: float


@dataclass
class Ladder:
    """The parameter-free Ladder over one pool: ``videos`` per question, starting from the
    ``baseline``'s answers."""

    videos: Sequence[str]
    baseline: Sequence[bool]
    best: list[bool] = field(init=False)
    released_loss: float = field(init=False)

    def __post_init__(self) -> None:
        self.best = list(self.baseline)
        self.released_loss = self._rounded(self._loss(self.best))

    def _loss(self, answers: Sequence[bool]) -> float:
        return 1.0 - sum(answers) / len(answers)

    def _rounded(self, loss: float) -> float:
        n = len(self.baseline)
        return round(loss * n) / n

    def submit(self, answers: Sequence[bool]) -> LadderStep:
        """Score a submission (its correctness per question, in the pool's order)."""
        if len(answers) != len(self.best):
            raise ValueError(f"{len(answers)} answers for a pool of {len(self.best)} questions")
        loss, best_loss = self._loss(answers), self._loss(self.best)
        threshold = best_loss - paired_se(self.videos, self.best, answers)
        moved = loss < threshold - 1e-12  # exactly one se is not more than one se
        if moved:
            self.best = list(answers)
            self.released_loss = self._rounded(loss)
        return LadderStep(self.released_loss, moved, threshold)
