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

from collections.abc import Sequence
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any

import numpy as np

_NORMAL = NormalDist()
Answers = Sequence[bool] | np.ndarray
Videos = Sequence[str] | np.ndarray


def video_codes(videos: Videos) -> np.ndarray:
    """Each question's video as an integer 0..K-1 (integers are kept as they are)."""
    array = np.asarray(videos)
    if np.issubdtype(array.dtype, np.integer):
        return array
    return np.unique(array, return_inverse=True)[1]


def paired_se(videos: Videos, a: Answers, b: Answers) -> float:
    """Standard error of the difference of two runs' accuracies (equally: of their losses) on
    the same questions, clustered by video: Obuchowski's between-video variance
    ``K / (K - 1) * sum_k ((x_k - n_k p_a) - (y_k - n_k p_b))^2 / N^2`` (the variance
    ``mcnemar.cluster_adjusted`` uses); 0 when no video moved."""
    codes = video_codes(videos)
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    n = len(x)
    k = int(codes.max()) + 1 if n else 0
    if k < 2:
        return 0.0
    size = np.bincount(codes, minlength=k)
    d = (np.bincount(codes, weights=x, minlength=k) - size * x.mean()) - \
        (np.bincount(codes, weights=y, minlength=k) - size * y.mean())
    var = k / (k - 1) * float(d @ d) / n ** 2
    return float(np.sqrt(var)) if var > 1e-15 else 0.0


def one_sided_p(videos: Videos, reference: Answers, candidate: Answers) -> float:
    """P-value of "the candidate is more accurate than the reference" (cluster-adjusted z,
    one-sided). No video moved: 1 when the accuracies are equal, else 0 or 1 by sign."""
    ref, cand = np.asarray(reference, dtype=float), np.asarray(candidate, dtype=float)
    gain = float(cand.mean() - ref.mean()) if len(ref) else 0.0
    se = paired_se(videos, ref, cand)
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

    videos: Videos
    baseline: Answers
    best: np.ndarray = field(init=False)
    released_loss: float = field(init=False)
    _codes: Any = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._codes = video_codes(self.videos)
        self.best = np.asarray(self.baseline, dtype=bool)
        self.released_loss = self._rounded(self._loss(self.best))

    @staticmethod
    def _loss(answers: np.ndarray) -> float:
        return 1.0 - float(answers.mean())

    def _rounded(self, loss: float) -> float:
        n = len(self.best)
        return round(loss * n) / n

    def submit(self, answers: Answers) -> LadderStep:
        """Score a submission (its correctness per question, in the pool's order)."""
        given = np.asarray(answers, dtype=bool)
        if len(given) != len(self.best):
            raise ValueError(f"{len(given)} answers for a pool of {len(self.best)} questions")
        loss = self._loss(given)
        threshold = self._loss(self.best) - paired_se(self._codes, self.best, given)
        moved = loss < threshold - 1e-12  # exactly one se is not more than one se
        if moved:
            self.best = given
            self.released_loss = self._rounded(loss)
        return LadderStep(self.released_loss, moved, threshold)
