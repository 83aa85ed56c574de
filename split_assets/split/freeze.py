"""Freezing a split: ``pools.json`` (SPEC §6.3) and ``split_manifest.json`` (§6.4)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from split_assets.errors import RunFailure
from split_assets.lib.canonical import atomic_write_bytes, canonical_bytes, digest_of, sha256_hex
from split_assets.split.problem import SplitProblem, SplitQuestion
from split_assets.split.selection import Selection
from split_assets.split.stats import accuracy, deviation_rows, t2_by_type, tier_counts

SCHEMA_VERSION = 1
POOLS = ("train", "validation", "test")


def split_id(baseline_run_id: str, video_split: dict[str, Any]) -> str:
    """12 hex of sha256 over (baseline_run_id, the video_split section)."""
    return digest_of({"baseline_run_id": baseline_run_id, "video_split": video_split})[:12]


@dataclass(frozen=True)
class FrozenSplit:
    """The pools of a split, their canonical bytes and digest."""

    pools: dict[str, list[str]]
    videos: dict[str, list[str]]
    data: bytes
    sha256: str


def build_pools(problem: SplitProblem, selection: Selection, validation: tuple[str, ...],
                baseline_run_id: str, fingerprint: str, split: str) -> FrozenSplit:
    """The canonical pools document; the same inputs always give the same bytes."""
    val = set(validation)
    videos = {"train": sorted(v for v in selection.trainval if v not in val),
              "validation": sorted(val), "test": sorted(selection.test)}
    pools = {name: sorted(q.question_id for v in videos[name] for q in problem.videos[v])
             for name in POOLS}
    doc = {
        "schema_version": SCHEMA_VERSION,
        "baseline_run_id": baseline_run_id,
        "diag_fingerprint": fingerprint,
        "split_id": split,
        "seed": problem.seed,
        "pools": pools,
        "videos": videos,
        "correctness": {q.question_id: q.correct for q in problem.questions},
    }
    data = canonical_bytes(doc)
    return FrozenSplit(pools, videos, data, sha256_hex(data))


def pool_questions(problem: SplitProblem, frozen: FrozenSplit) -> dict[str, list[SplitQuestion]]:
    return {name: [q for v in frozen.videos[name] for q in problem.videos[v]] for name in POOLS}


def manifest(problem: SplitProblem, frozen: FrozenSplit, *, generated_at: str,
             split: str, fingerprint: str, fingerprint_components: dict[str, Any],
             config_snapshot: dict[str, Any], input_digests: dict[str, str],
             val_wrong_min: int, power: dict[str, Any] | None = None) -> dict[str, Any]:
    """The manifest: provenance, figures and digests; no clock durations, no absolute paths."""
    by_pool = pool_questions(problem, frozen)
    trainval = by_pool["train"] + by_pool["validation"]
    t2 = t2_by_type(trainval)
    rows = deviation_rows(problem, by_pool["test"])
    return {
        "schema_version": SCHEMA_VERSION,
        "generated_at": generated_at,
        "pools_sha256": frozen.sha256,
        "split_id": split,
        "diag_fingerprint": fingerprint,
        "fingerprint_components": fingerprint_components,
        "config": config_snapshot,
        "input_digests": input_digests,
        "counts": {name: {"questions": len(by_pool[name]), "videos": len(frozen.videos[name])}
                   for name in POOLS},
        "distributions": {name: _distribution(problem, by_pool[name]) for name in POOLS},
        "test_deviation": rows,
        "floors": {t: {"floor": k, "trainval_t2": t2.get(t, 0)}
                   for t, k in sorted(problem.floor_k.items())},
        "tier_counts": {name: tier_counts(by_pool[name]) for name in POOLS},
        "baseline_accuracy": {"global": round(accuracy(problem.questions), 6),
                              "test": round(accuracy(by_pool["test"]), 6),
                              "validation": round(accuracy(by_pool["validation"]), 6),
                              "train": round(accuracy(by_pool["train"]), 6),
                              "test_minus_global": round(accuracy(by_pool["test"])
                                                         - accuracy(problem.questions), 6),
                              "epsilon_accuracy": problem.epsilon_accuracy},
        "validation_wrong": sum(not q.correct for q in by_pool["validation"]),
        "val_wrong_min": val_wrong_min,
        "power": power or {},
    }


def _distribution(problem: SplitProblem,
                  questions: list[SplitQuestion]) -> dict[str, dict[str, int]]:
    """Question counts per value of task type, difficulty and each ``balance`` field."""
    dims = ("task_type", "difficulty", *problem.balance)
    out: dict[str, dict[str, int]] = {d: {} for d in dims}
    for q in questions:
        for d in dims:
            value = problem.value_of(q, d)
            out[d][value] = out[d].get(value, 0) + 1
    return {k: dict(sorted(v.items())) for k, v in out.items()}


def write_frozen(out_dir: Path, frozen: FrozenSplit, manifest_doc: dict[str, Any]) -> None:
    """Write pools.json and split_manifest.json atomically.

    A frozen pools.json is never overwritten with different bytes: that would mean the same
    inputs gave a different split (a determinism bug), so it fails loud instead.
    """
    pools_path = out_dir / "pools.json"
    if pools_path.exists() and pools_path.read_bytes() != frozen.data:
        raise RunFailure(f"frozen pools differ from the existing file (sha256 "
                         f"{sha256_hex(pools_path.read_bytes())[:12]} on disk, "
                         f"{frozen.sha256[:12]} now)", str(pools_path),
                         "the same inputs must give the same split: report this as a bug; move "
                         "the old folder away to re-freeze deliberately")
    if not pools_path.exists():
        atomic_write_bytes(pools_path, frozen.data)
    atomic_write_bytes(out_dir / "split_manifest.json", canonical_bytes(manifest_doc))
