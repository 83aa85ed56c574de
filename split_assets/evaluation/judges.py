"""Agreement between two judges (two diagnosis fingerprints) on the baseline run's wrong
answers: kappa on the tier and on the error type, over the questions both diagnosed (INFRA and
degraded rows left out), and what the difference would do to the split's floors."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

from split_assets.errors import InputError
from split_assets.evaluation.agreement import AgreementReport, Kappa, Pair, report
from split_assets.store.signals import SignalRow

if TYPE_CHECKING:
    from split_assets.workspace.partition import Partition

TIERS = ("T1", "T2")


@dataclass(frozen=True)
class FloorChange:
    task_type: str
    floor: int
    t2_a: int
    t2_b: int

    @property
    def changed(self) -> bool:
        """Met under one judge and not under the other."""
        return (self.t2_a >= self.floor) != (self.t2_b >= self.floor)


@dataclass(frozen=True)
class JudgeComparison:
    a: str
    b: str
    only_a: int  # diagnosed (non-degraded) under a only
    only_b: int
    tier: AgreementReport
    error_type: AgreementReport
    floors: list[FloorChange]

    @property
    def floors_changed(self) -> int:
        return sum(f.changed for f in self.floors)

    @property
    def tiers_changed(self) -> int:
        table = self.tier.overall.table
        return int(round(sum(table[i][j] for i in range(len(table))
                             for j in range(len(table)) if i != j)))


def usable(rows: list[SignalRow]) -> dict[str, SignalRow]:
    """A judge's verdicts: non-INFRA, non-degraded rows by question."""
    return {r.question_id: r for r in rows if not r.infra and not r.degraded}


def pairs_of(a: dict[str, SignalRow], b: dict[str, SignalRow], field: str) -> list[Pair]:
    return [Pair(q, a[q].video_id, a[q].task_type, str(getattr(a[q], field)),
                 str(getattr(b[q], field))) for q in sorted(a.keys() & b.keys())]


def compare_fingerprints(partition: Partition, a: str, b: str,
                         seed: int = 0) -> JudgeComparison:
    """Kappa of fingerprint ``a`` against ``b`` on the baseline run of ``partition`` (its
    signal store and floors)."""
    with partition.store(read_only=True, required=True) as store:
        rows = {key: usable(store.rows(partition.run_id, key)) for key in (a, b)}
    for key, flag in ((a, "--a"), (b, "--b")):
        if not rows[key]:
            raise InputError(f"no diagnoses of run {partition.run_id} under {key}", flag,
                             "name a fingerprint diagnosed with this signal store "
                             "('split-assets fingerprint' prints the config's own)")
    ra, rb = rows[a], rows[b]
    if not ra.keys() & rb.keys():
        raise InputError(f"{a} and {b} diagnosed no question in common", "--a/--b",
                         "compare two fingerprints of the same baseline run")
    floor_k = partition.video_split.floor_k
    t2 = {key: Counter(r.task_type for r in rows[key].values() if r.tier == "T2")
          for key in (a, b)}
    floors = [FloorChange(t, f, t2[a][t], t2[b][t]) for t, f in sorted(floor_k.items())]
    return JudgeComparison(
        a, b, len(ra.keys() - rb.keys()), len(rb.keys() - ra.keys()),
        report(pairs_of(ra, rb, "tier"), "tier", TIERS, seed=seed),
        report(pairs_of(ra, rb, "error_type"), "error_type", seed=seed), floors)


def _k(k: Kappa) -> str:
    if math.isnan(k.kappa):
        return f"undefined (n {k.n}: a rater used one label only)"
    return f"{k.kappa:.3f} [{k.low:.3f}, {k.high:.3f}] (n {k.n})"


def text(c: JudgeComparison) -> str:
    """The comparison as a user reads it: kappa lines, the tier confusion matrix, per task
    type, the floors."""
    lines = [f"a={c.a}", f"b={c.b}", f"both_diagnosed={c.tier.overall.n}",
             f"only_a={c.only_a}", f"only_b={c.only_b}",
             f"kappa_tier={_k(c.tier.overall)}",
             f"kappa_error_type={_k(c.error_type.overall)}",
             f"tiers_changed={c.tiers_changed}", f"floors_changed={c.floors_changed}",
             "", "tier confusion (rows: a, columns: b)",
             "      " + "".join(f"{t:>7}" for t in c.tier.overall.labels)]
    for label, row in zip(c.tier.overall.labels, c.tier.overall.table, strict=True):
        lines.append(f"  {label:<4}" + "".join(f"{int(x):>7}" for x in row))
    lines += ["", "kappa_tier per task type (>= 10 questions diagnosed by both)"]
    lines += [f"  {t}: {_k(k)}" for t, k in c.tier.by_task_type.items()]
    lines += ["", "kappa_error_type per task type (>= 10 questions diagnosed by both)"]
    lines += [f"  {t}: {_k(k)}" for t, k in c.error_type.by_task_type.items()]
    if c.floors:
        lines += ["", "floors (non-degraded T2 per task type, all diagnosed questions)"]
        lines += [f"  {f.task_type}: floor {f.floor}, a {f.t2_a}, b {f.t2_b}"
                  f"{'  <- met under one judge only' if f.changed else ''}" for f in c.floors]
    return "\n".join(lines)

