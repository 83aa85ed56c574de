"""The names of a frozen split: its pools and its files, spelled once."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

POOLS = ("train", "validation", "test")  # every pool of a split
EVALUATED_POOLS = ("validation", "test")  # the pools a candidate is compared on
POOLS_FILE = "pools.json"
MANIFEST_FILE = "split_manifest.json"
EVALUATION_FILE = "evaluation.json"


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
