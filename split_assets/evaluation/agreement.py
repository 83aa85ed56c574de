"""How far two raters of the same wrong answers agree: Cohen's kappa, with a 95 % interval
from a bootstrap over videos (questions of one video are not independent: the same footage,
the same tree, often the same mistake), the confusion matrix, and the same per task type.

Raters are two judges (two fingerprints, ``split-assets agreement``) or a judge and human
reviewers (``judge_agreement``). Sampling weights (inverse inclusion probabilities of a
stratified review sample) weight every count; unweighted, kappa equals scikit-learn's
``cohen_kappa_score`` and statsmodels' ``cohens_kappa`` (tests check both).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

BOOTSTRAP_B = 2000
LEVEL = 0.95


@dataclass(frozen=True)
class Pair:
    """One question rated by both raters."""

    question_id: str
    video_id: str
    task_type: str
    a: str
    b: str
    weight: float = 1.0


@dataclass(frozen=True)
class Kappa:
    """Kappa of one comparison; ``low``/``high``: the bootstrap interval (NaN when undefined,
    e.g. both raters used one label only)."""

    n: int
    kappa: float
    low: float
    high: float
    labels: tuple[str, ...] = ()
    table: tuple[tuple[float, ...], ...] = ()  # rows: rater a, columns: rater b
    observed: float = math.nan  # share of (weighted) agreement

    @property
    def ci_width(self) -> float:
        return self.high - self.low

    def as_dict(self) -> dict[str, object]:
        def r(x: float) -> float | None:
            return None if math.isnan(x) else round(x, 4)
        return {"n": self.n, "kappa": r(self.kappa), "ci_low": r(self.low),
                "ci_high": r(self.high), "observed_agreement": r(self.observed)}


@dataclass(frozen=True)
class AgreementReport:
    """Kappa overall and per task type, for one field (tier or error type)."""

    field: str
    overall: Kappa
    by_task_type: dict[str, Kappa] = field(default_factory=dict)


def kappa_of_tables(tables: np.ndarray) -> np.ndarray:
    """Cohen's kappa of each K x K table in ``tables`` (shape (..., K, K))."""
    total = tables.sum(axis=(-2, -1))
    with np.errstate(invalid="ignore", divide="ignore"):
        p = tables / total[..., None, None]
        po = np.trace(p, axis1=-2, axis2=-1)
        pe = (p.sum(axis=-1) * p.sum(axis=-2)).sum(axis=-1)
        return (po - pe) / (1 - pe)


def confusion(pairs: Sequence[Pair], labels: Sequence[str]) -> np.ndarray:
    index = {label: i for i, label in enumerate(labels)}
    table = np.zeros((len(labels), len(labels)))
    for p in pairs:
        table[index[p.a], index[p.b]] += p.weight
    return table


def kappa(pairs: Sequence[Pair], labels: Sequence[str] | None = None, b: int = BOOTSTRAP_B,
          seed: int = 0) -> Kappa:
    """Kappa of ``pairs`` and its percentile interval from ``b`` resamples of whole videos
    (each resample draws as many videos as there are, with replacement)."""
    labels = tuple(labels or sorted({p.a for p in pairs} | {p.b for p in pairs}))
    if not pairs or len(labels) < 1:
        return Kappa(0, math.nan, math.nan, math.nan, labels)
    videos = sorted({p.video_id for p in pairs})
    at = {v: i for i, v in enumerate(videos)}
    k = len(labels)
    index = {label: i for i, label in enumerate(labels)}
    per_video = np.zeros((len(videos), k * k))
    for p in pairs:
        per_video[at[p.video_id], index[p.a] * k + index[p.b]] += p.weight
    table = per_video.sum(axis=0).reshape(k, k)
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(len(videos), np.full(len(videos), 1 / len(videos)), size=b)
    boot = kappa_of_tables((draws @ per_video).reshape(b, k, k))
    boot = boot[~np.isnan(boot)]
    tail = (1 - LEVEL) / 2 * 100
    low, high = (np.percentile(boot, [tail, 100 - tail]) if boot.size else (math.nan,) * 2)
    value = float(kappa_of_tables(table))
    observed = float(np.trace(table) / table.sum())
    return Kappa(len(pairs), value, float(low), float(high), labels,
                 tuple(tuple(float(x) for x in row) for row in table), observed)


def report(pairs: Sequence[Pair], field_name: str, labels: Sequence[str] | None = None,
           b: int = BOOTSTRAP_B, seed: int = 0, min_per_type: int = 10) -> AgreementReport:
    """Kappa overall and for each task type with at least ``min_per_type`` pairs."""
    by_type: dict[str, list[Pair]] = {}
    for p in pairs:
        by_type.setdefault(p.task_type, []).append(p)
    labels = tuple(labels or sorted({p.a for p in pairs} | {p.b for p in pairs}))
    return AgreementReport(field_name, kappa(pairs, labels, b, seed), {
        t: kappa(ps, labels, b, seed) for t, ps in sorted(by_type.items())
        if len(ps) >= min_per_type})
