"""Paired comparison of two runs on the same questions: McNemar's test, exact and mid-p, a
cluster-adjusted variant for the 3 questions of a video, and the minimum detectable gain.

Tables are ``[[a, b], [c, d]]`` with rows = the reference run (baseline or control) correct /
wrong and columns = the candidate correct / wrong, as statsmodels' ``mcnemar`` reads them:
``b`` = answers the candidate broke, ``c`` = answers it fixed.

- exact p: the two-sided binomial test of ``c`` among the ``b + c`` discordant pairs at 1/2
  (``scipy.stats.binomtest``); equal to statsmodels' ``mcnemar(table, exact=True)``.
- mid-p: ``2 P(X <= min(b, c)) - P(X = min(b, c))``, X ~ Bin(b + c, 1/2) (Fagerland, Lydersen
  and Laake 2013), capped at 1.
- cluster-adjusted: Obuchowski's (1998) statistic for clustered paired proportions:
  ``(p1 - p2)^2 / (v1 + v2 - 2 c12)`` with the between-video variance estimates
  ``v = K / (K - 1) * sum_i (x_i - n_i p)^2 / N^2`` over the K videos (N questions), referred
  to chi-squared with 1 degree of freedom. It does not assume a video's 3 answers independent.
- minimum detectable gain (MDE): the accuracy difference that McNemar's test at level
  ``alpha`` detects with probability ``power``, from Connor's (1987) sample size formula
  ``n = (z_{1-alpha/2} sqrt(psi) + z_{power} sqrt(psi - delta^2))^2 / delta^2`` solved for
  delta in (0, psi], with n the pool's questions divided by the design effect
  ``1 + (m - 1) rho`` (m the mean questions per video, rho the intra-video correlation of the
  paired differences with a re-run of the baseline -- the control run, else the reference
  runs -- or, without one, of baseline correctness, which is more clustered and so
  conservative; one-way ANOVA estimator, floored at 0) and psi the expected share of
  discordant pairs. The formula is for the asymptotic test; the exact test's power at that
  gain is a little lower (about 77 % in simulations at these sizes).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from statistics import NormalDist
from typing import Any

_NORMAL = NormalDist()  # standard normal quantiles (the stdlib: no scipy at import)


@dataclass(frozen=True)
class PairedResult:
    """One paired comparison on one pool."""

    n: int
    table: tuple[tuple[int, int], tuple[int, int]]
    reference_accuracy: float
    candidate_accuracy: float
    gain: float
    p_exact: float
    p_mid: float
    p_cluster: float
    gain_ci95: tuple[float, float] | None  # None: between-video variance not estimable
    videos: int

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["table"] = [list(row) for row in self.table]
        out["gain_ci95"] = ([round(v, 6) for v in self.gain_ci95] if self.gain_ci95 is not None
                            else None)
        for key in ("reference_accuracy", "candidate_accuracy", "gain"):
            out[key] = round(out[key], 6)
        for key in ("p_exact", "p_mid", "p_cluster"):  # significant digits: small p stay > 0
            out[key] = float(f"{out[key]:.6g}")
        return out


def table_of(reference: Sequence[bool], candidate: Sequence[bool]) -> list[list[int]]:
    """The 2x2 table of paired correctness (rows reference, columns candidate)."""
    a = b = c = d = 0
    for r, k in zip(reference, candidate, strict=True):
        if r and k:
            a += 1
        elif r:
            b += 1
        elif k:
            c += 1
        else:
            d += 1
    return [[a, b], [c, d]]


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value (1.0 without discordant pairs)."""
    if b + c == 0:
        return 1.0
    from scipy.stats import binomtest

    return float(binomtest(c, b + c, 0.5).pvalue)


def mcnemar_mid_p(b: int, c: int) -> float:
    """McNemar mid-p-value (1.0 without discordant pairs)."""
    n = b + c
    if n == 0:
        return 1.0
    k = min(b, c)
    from scipy.stats import binom

    return float(min(1.0, 2 * binom.cdf(k, n, 0.5) - binom.pmf(k, n, 0.5)))


def cluster_adjusted(clusters: Sequence[tuple[int, int, int]]) -> tuple[float, float]:
    """Obuchowski's clustered McNemar: (p-value, standard error of the difference) from
    (questions, reference correct, candidate correct) per video."""
    k = len(clusters)
    total = sum(n for n, _, _ in clusters)
    if k < 2 or total == 0:
        return 1.0, 0.0
    p1 = sum(x for _, x, _ in clusters) / total
    p2 = sum(y for _, _, y in clusters) / total
    scale = k / (k - 1) / total ** 2
    v1 = scale * sum((x - n * p1) ** 2 for n, x, _ in clusters)
    v2 = scale * sum((y - n * p2) ** 2 for n, _, y in clusters)
    c12 = scale * sum((x - n * p1) * (y - n * p2) for n, x, y in clusters)
    var = v1 + v2 - 2 * c12
    if var <= 1e-15:  # every video moved alike (or none moved): not estimable
        return (1.0, 0.0) if abs(p1 - p2) < 1e-15 else (math.nan, math.nan)
    from scipy.stats import chi2

    return float(chi2.sf((p1 - p2) ** 2 / var, 1)), math.sqrt(var)


def compare(video_of: Sequence[str], reference: Sequence[bool],
            candidate: Sequence[bool]) -> PairedResult:
    """Everything about one paired comparison of questions (grouped by ``video_of``)."""
    table = table_of(reference, candidate)
    (_, b), (c, _) = table
    n = len(reference)
    per_video: dict[str, list[int]] = {}
    for v, r, k in zip(video_of, reference, candidate, strict=True):
        cell = per_video.setdefault(v, [0, 0, 0])
        cell[0] += 1
        cell[1] += int(r)
        cell[2] += int(k)
    p_cluster, se = cluster_adjusted([tuple(cell) for cell in per_video.values()])
    ref_acc = sum(reference) / n if n else 0.0
    cand_acc = sum(candidate) / n if n else 0.0
    gain = cand_acc - ref_acc
    z = _NORMAL.inv_cdf(0.975)
    exact = mcnemar_exact(b, c)
    if math.isnan(p_cluster):  # the between-video variance is 0: fall back to the exact test
        p_cluster, ci = exact, None
    else:
        ci = (gain - z * se, gain + z * se)
    return PairedResult(n, (tuple(table[0]), tuple(table[1])), ref_acc, cand_acc, gain,
                        exact, mcnemar_mid_p(b, c), p_cluster, ci, len(per_video))


# ---------------------------------------------------------------- power ------------------

def icc_anova(groups: Sequence[Sequence[float]]) -> float:
    """Intra-cluster correlation of an outcome (one-way ANOVA estimator, >= 0)."""
    groups = [g for g in groups if len(g)]
    k = len(groups)
    total = sum(len(g) for g in groups)
    if k < 2 or total <= k:
        return 0.0
    mean = sum(sum(g) for g in groups) / total
    ssb = sum(len(g) * (sum(g) / len(g) - mean) ** 2 for g in groups)
    ssw = sum(sum((x - sum(g) / len(g)) ** 2 for x in g) for g in groups)
    msb, msw = ssb / (k - 1), ssw / (total - k)
    n0 = (total - sum(len(g) ** 2 for g in groups) / total) / (k - 1)
    denominator = msb + (n0 - 1) * msw
    return max(0.0, (msb - msw) / denominator) if denominator > 0 else 0.0


def connor_n(delta: float, psi: float, alpha: float = 0.05, power: float = 0.8) -> float:
    """Connor (1987): paired questions McNemar needs to detect ``delta`` given discordance
    ``psi``."""
    za, zb = _NORMAL.inv_cdf(1 - alpha / 2), _NORMAL.inv_cdf(power)
    return float((za * math.sqrt(psi) + zb * math.sqrt(max(psi - delta ** 2, 0.0))) ** 2
                 / delta ** 2)


def minimum_detectable_gain(n_effective: float, psi: float, alpha: float = 0.05,
                            power: float = 0.8) -> float | None:
    """The smallest accuracy gain detectable with ``n_effective`` independent pairs (None when
    even flipping every discordant pair one way is not detectable): Connor's n(delta) solved
    for delta in closed form. With n = n(delta), squaring sqrt(n) delta - za sqrt(psi) =
    zb sqrt(psi - delta^2) gives (n + zb^2) delta^2 - 2 za sqrt(psi n) delta +
    psi (za^2 - zb^2) = 0; of its two roots, the one in (0, psi] that solves Connor's equation
    (squaring added the other). Agrees with a numerical root (brentq, xtol 1e-12) to 3e-13."""
    if n_effective <= 0 or psi <= 0:
        return None
    top = psi  # the net gain is at most the share of discordant pairs (all of them one way)
    if connor_n(top, psi, alpha, power) > n_effective:
        return None
    n = n_effective
    za, zb = _NORMAL.inv_cdf(1 - alpha / 2), _NORMAL.inv_cdf(power)
    spread = zb * math.sqrt(max(n - za * za + zb * zb, 0.0))
    roots = [math.sqrt(psi) * (za * math.sqrt(n) + sign * spread) / (n + zb * zb)
             for sign in (1.0, -1.0)]
    valid = [d for d in roots if 0.0 < d <= top * (1 + 1e-12)]
    return min(valid, key=lambda d: abs(connor_n(d, psi, alpha, power) - n))


def power_summary(groups: Sequence[Sequence[float]], psi: float, psi_source: str,
                  icc_source: str = "", alpha: float = 0.05,
                  power: float = 0.8) -> dict[str, Any]:
    """MDE of one pool. ``groups``: per video, the per-question values whose intra-video
    correlation gives the design effect -- the paired differences with a re-run when one is
    known, else baseline correctness (more clustered than the differences: conservative)."""
    n = sum(len(g) for g in groups)
    k = len([g for g in groups if len(g)])
    rho = icc_anova(groups)
    mean_size = n / k if k else 0.0
    deff = 1 + (mean_size - 1) * rho
    n_eff = n / deff if deff > 0 else 0.0
    mde = minimum_detectable_gain(n_eff, psi, alpha, power)
    return {"questions": n, "videos": k, "icc": round(rho, 6), "icc_source": icc_source,
            "design_effect": round(deff, 6),
            "effective_n": round(n_eff, 3), "discordance": round(psi, 6),
            "discordance_source": psi_source, "alpha": alpha, "power": power,
            "mde": round(mde, 6) if mde is not None else None}
