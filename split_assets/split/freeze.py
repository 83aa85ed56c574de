"""Freezing a split: ``pools.json`` (SPEC §6.3) and ``split_manifest.json`` (§6.4)."""

from __future__ import annotations

import errno
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from split_assets.errors import InputError, RunFailure
from split_assets.lib.canonical import (
    UMASK,
    atomic_write_bytes,
    canonical_bytes,
    digest_of,
    sha256_hex,
)
from split_assets.lib.failpoints import failpoint
from split_assets.lib.files import pid_alive
from split_assets.lib.package_version import PACKAGE, package_version
from split_assets.split.layout import MANIFEST_FILE, POOLS, POOLS_FILE
from split_assets.split.problem import SplitProblem, SplitQuestion, available_t2
from split_assets.split.stats import accuracy, deviation_rows, t2_by_type, tier_counts

if TYPE_CHECKING:  # the selection pulls in scipy: a command that fails early need not load it
    from split_assets.split.selection import Selection

SCHEMA_VERSION = 1


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
        "seed": problem.selection.seed,
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
             val_wrong_min: int, power: dict[str, Any] | None = None,
             degraded: list[str] | None = None,
             warnings: list[str] | None = None) -> dict[str, Any]:
    """The manifest: provenance, figures and digests; no clock durations, no absolute paths.
    ``balance_runs`` (each balanced run's deviation and the leave-one-run-out estimate) and
    ``warnings`` (a split that is not outcome-driven, ``split/degenerate.py``) appear only when
    there are any, so the manifest of an earlier config keeps its keys."""
    by_pool = pool_questions(problem, frozen)
    trainval = by_pool["train"] + by_pool["validation"]
    t2 = t2_by_type(trainval)
    rows = deviation_rows(problem, by_pool["test"])
    doc = {
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
        "floors": floors_section(problem, t2),
        "tier_counts": {name: tier_counts(by_pool[name]) for name in POOLS},
        "baseline_accuracy": {"global": round(accuracy(problem.questions), 6),
                              "test": round(accuracy(by_pool["test"]), 6),
                              "validation": round(accuracy(by_pool["validation"]), 6),
                              "train": round(accuracy(by_pool["train"]), 6),
                              "test_minus_global": round(accuracy(by_pool["test"])
                                                         - accuracy(problem.questions), 6),
                              "epsilon_accuracy": problem.selection.epsilon_accuracy},
        "validation_wrong": sum(not q.correct for q in by_pool["validation"]),
        "val_wrong_min": val_wrong_min,
        "power": power or {},
        # degraded diagnoses frozen as not-T2 (--allow-degraded): settled for this split
        "degraded_question_ids": sorted(degraded or []),
        "made_by": {"package": PACKAGE, "version": package_version()},
    }
    if problem.selection.balance_runs:
        from split_assets.split.balance_runs import balance_section

        doc["balance_runs"] = balance_section(problem, frozen.videos["test"])
    if warnings:
        doc["warnings"] = list(warnings)
    return doc


def floors_section(problem: SplitProblem, t2: dict[str, int]) -> dict[str, Any]:
    """T2 per task type in trainval against its floor; with ``floor_share`` also the T2
    available and where each floor came from (``floor_k`` or ``floor_share``)."""
    if problem.selection.floor_share is None:
        return {t: {"floor": k, "trainval_t2": t2.get(t, 0)}
                for t, k in sorted(problem.floors.items())}
    available = available_t2(problem.questions)
    return {t: {"floor": k, "trainval_t2": t2.get(t, 0), "available": available.get(t, 0),
                "from": "floor_k" if t in problem.selection.floor_k else "floor_share"}
            for t, k in sorted(problem.floors.items())}


def _distribution(problem: SplitProblem,
                  questions: list[SplitQuestion]) -> dict[str, dict[str, int]]:
    """Question counts per value of task type, difficulty and each ``balance`` field."""
    dims = ("task_type", "difficulty", *problem.selection.balance)
    out: dict[str, dict[str, int]] = {d: {} for d in dims}
    for q in questions:
        for d in dims:
            value = problem.value_of(q, d)
            out[d][value] = out[d].get(value, 0) + 1
    return {k: dict(sorted(v.items())) for k, v in out.items()}


def write_frozen(out_dir: Path, frozen: FrozenSplit, manifest_doc: dict[str, Any]) -> None:
    """Write pools.json and split_manifest.json so that both appear together or not at all:
    into a temporary folder beside ``out_dir``, then renamed into place.

    A frozen pools.json is never overwritten with different bytes. When it exists with the
    same bytes only the manifest is replaced (atomically); with other bytes, the error names
    the inputs whose digests changed since it was frozen (nothing changed: a determinism bug).
    """
    pools_path, manifest_path = out_dir / POOLS_FILE, out_dir / MANIFEST_FILE
    manifest_data = canonical_bytes(manifest_doc)
    if pools_path.exists():
        _same_split_or_fail(pools_path, manifest_path, frozen, manifest_doc)
        atomic_write_bytes(manifest_path, manifest_data)
        return
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_temporaries(out_dir)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.{os.getpid()}.", suffix=".tmp",
                                dir=out_dir.parent))
    try:
        failpoint("freeze.tmp_created")
        _write_synced(tmp / POOLS_FILE, frozen.data, pools_path)
        failpoint("freeze.pools_written")
        _write_synced(tmp / MANIFEST_FILE, manifest_data, manifest_path)
        failpoint("freeze.manifest_written")
        os.chmod(tmp, 0o777 & ~UMASK)  # mkdtemp makes it private; the split folder is not
        try:
            os.rename(tmp, out_dir)
        except OSError as exc:
            if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                raise
            # out_dir exists: another run froze it meanwhile, or it holds only other files
            if pools_path.exists():
                _same_split_or_fail(pools_path, manifest_path, frozen, manifest_doc)
            else:  # manifest first: a pools.json is never visible without its manifest
                os.replace(tmp / MANIFEST_FILE, manifest_path)
                failpoint("freeze.manifest_moved")
                os.replace(tmp / POOLS_FILE, pools_path)
        failpoint("freeze.renamed")
        _fsync_dir(out_dir.parent)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _same_split_or_fail(pools_path: Path, manifest_path: Path, frozen: FrozenSplit,
                        manifest_doc: dict[str, Any]) -> None:
    existing = pools_path.read_bytes()
    if existing == frozen.data:
        return
    changed: list[str] = []
    try:
        old = json.loads(manifest_path.read_bytes()).get("input_digests", {})
        new = manifest_doc.get("input_digests", {})
        changed = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
    except (OSError, ValueError):
        pass
    shas = f"sha256 {sha256_hex(existing)[:12]} on disk, {frozen.sha256[:12]} now"
    if changed:
        raise InputError(f"the inputs changed since this split was frozen ({', '.join(changed)};"
                         f" {shas})", str(pools_path),
                         "a frozen split is never overwritten: restore the inputs, or move the "
                         "split folder away to freeze a new split deliberately")
    raise RunFailure(f"frozen pools differ from the existing file ({shas}) although no input "
                     "digest changed", str(pools_path),
                     "the same inputs must give the same split: report this as a bug; move the "
                     "old folder away to re-freeze deliberately")


def _write_synced(path: Path, data: bytes, destination: Path) -> None:
    """Write and fsync ``path``; a failed write (a full disk names no file) names the file
    being frozen, ``destination``."""
    try:
        with open(path, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(path, 0o666 & ~UMASK)
    except OSError as exc:
        if exc.filename is None or exc.filename == str(path):
            raise OSError(exc.errno, exc.strerror, str(destination)) from exc
        raise


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _remove_stale_temporaries(out_dir: Path) -> None:
    """Temporary split folders left by a freeze that was killed (its process is gone)."""
    for tmp in out_dir.parent.glob(f".{out_dir.name}.*.tmp"):
        pid = tmp.name.split(".")[2] if tmp.name.count(".") >= 3 else ""
        if pid.isdigit() and not pid_alive(int(pid)):
            shutil.rmtree(tmp, ignore_errors=True)
