"""The six invariants of a frozen split (SPEC §6.6), re-verified from the file on disk."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from split_assets.lib.canonical import sha256_hex
from split_assets.split.problem import SplitProblem
from split_assets.split.stats import category_shares, epsilon_violations

INVARIANTS = ("pools_disjoint", "pools_cover_benchmark", "videos_atomic", "floors_met",
              "test_within_epsilon", "pools_sha256_matches")


@dataclass(frozen=True)
class InvariantResult:
    """The outcome of one invariant with the figures behind it."""

    name: str
    passed: bool
    detail: str
    figures: dict[str, Any]


def verify(problem: SplitProblem, data: bytes,
           expected_sha256: str | None) -> list[InvariantResult]:
    """Check all six invariants of a pools.json's bytes against the problem it was built from.
    ``expected_sha256`` is the manifest's pools_sha256; None (no manifest) fails the last
    invariant rather than comparing the file with itself."""
    doc = json.loads(data)
    pools: dict[str, list[str]] = doc["pools"]
    results = []

    sets = {k: set(v) for k, v in pools.items()}
    overlap = (sets["train"] & sets["validation"]) | (sets["train"] & sets["test"]) | (
        sets["validation"] & sets["test"])
    results.append(InvariantResult("pools_disjoint", not overlap,
                                   f"{len(overlap)} question(s) in more than one pool",
                                   {"overlap": len(overlap)}))

    union = sets["train"] | sets["validation"] | sets["test"]
    everything = {q.question_id for q in problem.questions}
    missing, extra = everything - union, union - everything
    results.append(InvariantResult("pools_cover_benchmark", not missing and not extra,
                                   f"{len(missing)} missing, {len(extra)} unknown",
                                   {"missing": len(missing), "unknown": len(extra),
                                    "questions": len(union)}))

    pool_of = {qid: name for name, ids in pools.items() for qid in ids}
    split_videos = [v for v, qs in problem.videos.items()
                    if len({pool_of.get(q.question_id) for q in qs}) != 1]
    results.append(InvariantResult("videos_atomic", not split_videos,
                                   f"{len(split_videos)} video(s) span several pools",
                                   {"split_videos": len(split_videos)}))

    results.append(_floors_met(problem, sets["train"] | sets["validation"]))
    results.append(_test_within_epsilon(problem, sets["test"]))
    results.append(_sha256_matches(data, expected_sha256))
    return results


def _floors_met(problem: SplitProblem, trainval: set[str]) -> InvariantResult:
    short = {}
    got_by_type = {}
    for task_type, floor in sorted(problem.floors.items()):
        got = sum(1 for q in problem.questions
                  if q.question_id in trainval and q.task_type == task_type and q.is_floor_t2)
        got_by_type[task_type] = got
        if got < floor:
            short[task_type] = f"{got} < {floor}"
    return InvariantResult("floors_met", not short,
                           "; ".join(f"{k}: {v}" for k, v in short.items()) or "all met",
                           {"trainval_t2": got_by_type})


def _test_within_epsilon(problem: SplitProblem, test_ids: set[str]) -> InvariantResult:
    test = [q for q in problem.questions if q.question_id in test_ids]
    shares = category_shares(problem, test)
    worst_cat, worst = max(((c.label, abs(t - g)) for c, g, t in shares),
                           key=lambda item: item[1], default=("", 0.0))
    over = epsilon_violations(problem, test)
    return InvariantResult("test_within_epsilon", not over,
                           f"max |dev| {worst:.4f} ({worst_cat}), "
                           f"epsilon {problem.selection.epsilon}"
                           + (f"; over: {'; '.join(over)}" if over else ""),
                           {"max_deviation": round(worst, 6), "epsilon": problem.selection.epsilon})


def _sha256_matches(data: bytes, expected_sha256: str | None) -> InvariantResult:
    actual = sha256_hex(data)
    if expected_sha256 is None:
        return InvariantResult("pools_sha256_matches", False,
                               f"file {actual[:12]}, but no split_manifest.json beside it to "
                               "compare with", {"sha256": actual, "expected": "(no manifest)"})
    return InvariantResult("pools_sha256_matches", actual == expected_sha256,
                           f"file {actual[:12]}, expected {expected_sha256[:12]}",
                           {"sha256": actual, "expected": expected_sha256})


def rederived(problem: SplitProblem, data: bytes) -> list[InvariantResult]:
    """What ``verify`` re-derives from the config's inputs beyond the six invariants: pool
    sizes from n_trainval and val_ratio, each pool's videos against its questions, and the
    baseline correctness recorded in the file against the baseline run."""
    doc = json.loads(data)
    videos, pools = doc["videos"], doc["pools"]
    results = []
    trainval = len(videos["train"]) + len(videos["validation"])
    sizes_ok = (trainval == problem.selection.n_trainval
                and len(videos["validation"]) == problem.n_validation)
    results.append(InvariantResult(
        "pool_sizes", sizes_ok,
        f"trainval {trainval} videos (n_trainval {problem.selection.n_trainval}), validation "
        f"{len(videos['validation'])} (expected {problem.n_validation})",
        {"trainval": trainval, "validation": len(videos["validation"])}))
    mismatched = []
    for name, vids in videos.items():
        expected = sorted(q.question_id for v in vids for q in problem.videos.get(v, []))
        if expected != sorted(pools.get(name, [])):
            mismatched.append(name)
    results.append(InvariantResult(
        "videos_match_questions", not mismatched,
        f"pool(s) whose videos do not hold exactly their questions: {', '.join(mismatched)}"
        if mismatched else "every pool's videos hold exactly its questions",
        {"mismatched": ",".join(mismatched)}))
    truth = {q.question_id: q.correct for q in problem.questions}
    differ = sorted(q for q, ok in doc["correctness"].items() if truth.get(q) is not ok)
    results.append(InvariantResult(
        "correctness_matches_run", not differ and len(doc["correctness"]) == len(truth),
        f"{len(differ)} question(s) whose recorded correctness differs from the baseline run"
        + (f" (e.g. {', '.join(differ[:3])})" if differ else ""), {"differ": len(differ)}))
    return results
