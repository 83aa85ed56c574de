"""The names of a frozen split: its pools and its files, spelled once."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

POOLS = ("train", "validation", "test")  # every pool of a split
EVALUATED_POOLS = ("validation", "test")  # the pools a candidate is compared on
POOLS_FILE = "pools.json"
MANIFEST_FILE = "split_manifest.json"
EVALUATION_FILE = "evaluation.json"
SELECTION_FILE = "trainval_selection.json"  # trainval_selection's choice, read by frozen_pools
DIGEST_CACHE_FILE = "input_digests_cache.json"
STEPS_DIR = ".steps"  # under paths.out_dir: what one step hands the next (never a frozen file)


@dataclass(frozen=True)
class SplitFiles:
    """The files of one frozen split folder (``out_dir/<fingerprint>/<split_id>/``)."""

    folder: Path

    @property
    def pools(self) -> Path:
        return self.folder / POOLS_FILE

    @property
    def manifest(self) -> Path:
        return self.folder / MANIFEST_FILE

    @property
    def evaluation(self) -> Path:
        return self.folder / EVALUATION_FILE


def digest_cache_path(out_root: Path) -> Path:
    """The digests of unchanged trees and traces a later run may reuse
    (``store/digest_cache.py``): beside the steps' hand-overs, never in a split folder."""
    return out_root / STEPS_DIR / DIGEST_CACHE_FILE


def selection_path(out_root: Path, fingerprint: str, split: str) -> Path:
    """Where trainval_selection leaves its choice for frozen_pools: beside the split folders,
    not in one (a split folder holds frozen files only, and appears whole or not at all)."""
    return out_root / STEPS_DIR / fingerprint / split / SELECTION_FILE

