"""The statistics of reusing a pool: the Ladder against a sequence computed by hand, Holm
against statsmodels, the one-sided cluster-adjusted test."""

from __future__ import annotations

import math
import random

import pytest

from split_assets.evaluation.reuse import Ladder, holm, one_sided_p, paired_se

# six videos of two questions; the baseline answers 6 of 12 right (loss 0.5)
VIDEOS = ["v1", "v1", "v2", "v2", "v3", "v3", "v4", "v4", "v5", "v5", "v6", "v6"]
BASELINE = [1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0]


def _se_by_hand(a: list[int], b: list[int]) -> float:
    """Obuchowski's variance of p_b - p_a over the videos, written out."""
    videos = sorted(set(VIDEOS))
    cells = [(sum(1 for v in VIDEOS if v == w),
              sum(x for v, x in zip(VIDEOS, a, strict=True) if v == w),
              sum(y for v, y in zip(VIDEOS, b, strict=True) if v == w)) for w in videos]
    k, n = len(cells), len(VIDEOS)
    p1, p2 = sum(a) / n, sum(b) / n
    d = [(x - m * p1) - (y - m * p2) for m, x, y in cells]
    return math.sqrt(k / (k - 1) * sum(x * x for x in d) / n ** 2)


def test_the_ladder_moves_only_beyond_one_paired_standard_error() -> None:
    ladder = Ladder(VIDEOS, [bool(x) for x in BASELINE])
    assert ladder.released_loss == 0.5
    # 1. fixes one question (loss 5/12): by hand, the deviations per video are -10/12 and
    #    five times 2/12, so se = sqrt(6/5 * 120/144) / 12 = 1/12: a gain of exactly one se is
    #    not more than one se (the comparison is not at the mercy of float rounding)
    one = [1, 1, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0]
    se = _se_by_hand(BASELINE, one)
    assert se == pytest.approx(1 / 12)
    assert paired_se(VIDEOS, [bool(x) for x in BASELINE], [bool(x) for x in one]) == \
        pytest.approx(se)
    step = ladder.submit([bool(x) for x in one])
    assert (step.moved, step.released_loss) == (False, 0.5)
    assert step.threshold == pytest.approx(0.5 - se)
    # 2. fixes four questions in four videos (loss 2/12): beyond one se, the board moves
    four = [1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 0]
    se = _se_by_hand(BASELINE, four)
    assert 0.5 - se > 2 / 12
    step = ladder.submit([bool(x) for x in four])
    assert (step.moved, step.released_loss) == (True, pytest.approx(2 / 12))
    # 3. the same loss again (another question wrong, another right): released stays
    same = [1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 0]
    step = ladder.submit([bool(x) for x in same])
    assert (step.moved, step.released_loss) == (False, pytest.approx(2 / 12))
    # 4. a worse one never moves it back
    assert not ladder.submit([bool(x) for x in BASELINE]).moved
    assert ladder.released_loss == pytest.approx(2 / 12)
    with pytest.raises(ValueError, match="3 answers for a pool of 12"):
        ladder.submit([True, True, True])


def test_holm_matches_statsmodels() -> None:
    from statsmodels.stats.multitest import multipletests

    rng = random.Random(7)
    for size in (1, 2, 5, 17, 60):
        pvalues = [rng.random() ** 3 for _ in range(size)]
        pvalues[0] = pvalues[-1]  # a tie
        expected = multipletests(pvalues, method="holm")[1]
        assert holm(pvalues) == pytest.approx(list(expected))
    assert holm([]) == []


def test_one_sided_p() -> None:
    base = [bool(x) for x in BASELINE]
    better = [True] * 10 + [False, False]
    p = one_sided_p(VIDEOS, base, better)
    gain = (10 - 6) / 12
    assert p == pytest.approx(1 - 0.5 * (1 + math.erf(gain / _se_by_hand(BASELINE, [
        int(x) for x in better]) / math.sqrt(2))))
    assert p < 0.05 and one_sided_p(VIDEOS, better, base) > 0.95  # the other direction
    assert one_sided_p(VIDEOS, base, base) == 1.0  # nothing moved


def test_paired_se_is_the_compare_reports_standard_error() -> None:
    """One variance for the Ladder and for compare's cluster-adjusted test."""
    from split_assets.evaluation.mcnemar import compare

    rng = random.Random(3)
    videos = [f"v{i // 3}" for i in range(300)]
    a = [rng.random() < 0.6 for _ in videos]
    b = [x if rng.random() < 0.8 else not x for x in a]
    result = compare(videos, a, b)
    low, high = result.gain_ci95
    assert paired_se(videos, a, b) == pytest.approx((high - low) / (2 * 1.959963984540054))
