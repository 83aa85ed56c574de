"""``split-assets verify``: a frozen pools.json checked against the config's inputs -- the six
invariants, what can be re-derived, and (``recompute``) the selection run again.

``check_pools_file(inputs, current, path, recompute)`` receives the config's inputs, the
config's partition and the file; it returns every check's ``InvariantResult``."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from split_assets.errors import UserError
from split_assets.split.invariants import InvariantResult, rederived, verify
from split_assets.split.layout import MANIFEST_FILE, POOLS

if TYPE_CHECKING:
    from split_assets.split.problem import SplitProblem
    from split_assets.workspace.inputs import Inputs
    from split_assets.workspace.partition import Partition

_NOT_OURS = "pass the pools.json printed by 'split-assets run'"


def read_pools_file(path: Path) -> tuple[bytes, dict[str, Any]]:
    """A pools.json's bytes and document; anything else is one line."""
    if not path.is_file():
        raise UserError(f"pools file not found: {path}", "POOLS_JSON", _NOT_OURS)
    data = path.read_bytes()
    doc = _json_document(data, path,
                         "restore it from the run that froze the split, or " + _NOT_OURS)
    try:
        _ = doc["diag_fingerprint"], doc["baseline_run_id"]
        for key in ("pools", "videos"):
            if sorted(doc[key]) != sorted(POOLS) or not all(
                    isinstance(v, list) and all(isinstance(x, str) for x in v)
                    for v in doc[key].values()):
                raise TypeError(key)
        if not isinstance(doc["correctness"], dict):
            raise TypeError("correctness")
    except (KeyError, TypeError, AttributeError):
        raise UserError("not a pools.json written by split-assets", str(path), _NOT_OURS
                        ) from None
    return data, doc


def _json_document(data: bytes, path: Path, fix: str) -> Any:
    """A file's JSON; bytes that are not UTF-8 or text that is not JSON say where."""
    what = path.name
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UserError(f"{what} is not UTF-8 text (byte {exc.start}: {exc.reason})", str(path),
                        fix) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise UserError(f"{what} is not valid JSON: {exc.msg} at line {exc.lineno} column "
                        f"{exc.colno}", str(path), fix) from None


def check_pools_file(inputs: Inputs, current: Partition, path: Path,
                     recompute: bool) -> list[InvariantResult]:
    """Every check of ``path`` against the config's inputs and partition (or the stale
    partition of the fingerprint the file carries)."""
    data, doc = read_pools_file(path)
    if doc["baseline_run_id"] != current.run_id:
        raise UserError(f"pools.json is of run {doc['baseline_run_id']!r}, the config of "
                        f"{current.run_id!r}", str(path),
                        "pass the config the split was made with")
    partition = _partition_of(inputs, current, doc["diag_fingerprint"], path)
    inputs.predictions  # noqa: B018 - the inputs first: their errors come before the store's
    rows = partition.rows(required=True)  # the diagnoses the split consumed: the store must exist
    manifest = _manifest(path.parent / MANIFEST_FILE)
    problem = inputs.split_problem(rows, partition.key)
    results = [identity_check(partition, doc, manifest)]
    results += verify(problem, data, manifest.get("pools_sha256") if manifest else None)
    results += rederived(problem, data)
    if recompute:
        # the digests only when the manifest recorded some, after the selection ran again
        digests = functools.cache(lambda: inputs.input_digests(rows, partition.fingerprint))
        results.append(recompute_check(partition, problem, digests, data, manifest))
        if manifest is not None:
            results.append(inputs_check(digests(), manifest))
    return results


def inputs_check(new: dict[str, str], manifest: dict[str, Any]) -> InvariantResult:
    """The input digests now (benchmark, predictions, signals; in full context the skills,
    trees and traces the judge read) against those the manifest recorded at the freeze: an
    input edited since is named even when the split's bytes come out the same."""
    old = manifest.get("input_digests", {})
    changed = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
    if changed:
        unrecorded = [k for k in changed if k not in old]
        return InvariantResult(
            "inputs_unchanged", False,
            f"input digests changed since the freeze: {', '.join(changed)}"
            + (f" ({', '.join(unrecorded)} not recorded by the freeze)" if unrecorded else "")
            + "; restore the inputs, or run split-assets run again to record them (a split "
              "whose bytes change is refused)", {"changed_inputs": ",".join(changed)})
    return InvariantResult("inputs_unchanged", True,
                           f"all {len(new)} input digests match the manifest",
                           {"changed_inputs": ""})


def _partition_of(inputs: Inputs, current: Partition, key: str, path: Path) -> Partition:
    """The partition of the fingerprint a pools.json carries: the config's, or a stale one (an
    earlier judge whose diagnoses the signal store holds, re-frozen with the current split
    settings)."""
    from split_assets.workspace.partition import stale_partition

    if key == current.key:
        return current
    with current.store(read_only=True) as store:
        known = store.fingerprint_components(key) is not None
    if not known:
        raise UserError(f"pools.json is of fingerprint {key}, which the signal store "
                        f"{current.loaded.paths.signals_db} does not hold (the config's is "
                        f"{current.key})", str(path),
                        "pass the config the split was made with")
    return stale_partition(current, key, inputs.predictions)


def identity_check(partition: Partition, doc: dict[str, Any],
                   manifest: dict[str, Any] | None) -> InvariantResult:
    """pools.json's own seed, split_id, baseline_run_id and diag_fingerprint agree with the
    manifest beside it and with the config (an edited field, even re-signed in the manifest's
    pools_sha256, shows here)."""
    vs = partition.loaded.config.video_split
    expected: dict[str, dict[str, Any]] = {
        "config": {"seed": vs.seed, "split_id": partition.split_id,
                   "baseline_run_id": partition.run_id, "diag_fingerprint": partition.key}}
    if manifest is not None:
        snap = manifest.get("config", {}).get("video_split", {})
        expected["manifest"] = {"seed": snap.get("seed"), "split_id": manifest.get("split_id"),
                                "baseline_run_id": snap.get("baseline_run_id"),
                                "diag_fingerprint": manifest.get("diag_fingerprint")}
    wrong = [f"{field} {doc.get(field)!r} in pools.json, {value!r} in the {source}"
             for source, fields in expected.items() for field, value in fields.items()
             if doc.get(field) != value]
    checked = " and ".join(expected)
    if wrong:
        return InvariantResult("identity_matches", False, "; ".join(wrong),
                               {"mismatches": len(wrong)})
    return InvariantResult("identity_matches", True,
                           f"seed, split_id, baseline_run_id and diag_fingerprint agree with "
                           f"the {checked}", {"mismatches": 0})


def _manifest(path: Path) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    doc = _json_document(path.read_bytes(), path,
                         "restore it from the run that froze the split")
    try:
        doc["pools_sha256"]
    except (KeyError, TypeError):
        raise UserError("split_manifest.json is not a manifest written by split-assets",
                        str(path), "restore it from the run that froze the split") from None
    return doc


def recompute_check(partition: Partition, problem: SplitProblem,
                    digests: Callable[[], dict[str, str]], data: bytes,
                    manifest: dict[str, Any] | None) -> InvariantResult:
    """Run the selection again from the inputs and compare bytes with a frozen pools.json (the
    split is deterministic: a difference is tampering or changed inputs, and the input digests
    recorded in the manifest tell which)."""
    from split_assets.split.freeze import build_pools
    from split_assets.split.selection import select_trainval  # scipy: loaded only when needed
    from split_assets.split.validation import draw_validation

    selection = select_trainval(problem)
    fresh = build_pools(problem, selection, draw_validation(problem, selection.trainval),
                        partition.run_id, partition.key, partition.split_id)
    if fresh.data == data:
        return InvariantResult("recomputed_bytes_match", True,
                               f"the selection run again gives the same bytes "
                               f"({fresh.sha256[:12]})", {"sha256": fresh.sha256})
    changed: list[str] = []
    if manifest is not None:
        old, new = manifest.get("input_digests", {}), digests()
        changed = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
    why = (f"input digests changed since the freeze: {', '.join(changed)}" if changed else
           "no input digest changed: the file was edited after the freeze")
    return InvariantResult("recomputed_bytes_match", False,
                           f"the selection run again gives {fresh.sha256[:12]}; {why}",
                           {"sha256": fresh.sha256, "changed_inputs": ",".join(changed)})
