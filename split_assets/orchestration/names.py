"""The Dagster names of one workspace. A declared workspace (``SplitWorkspace`` instance
``demo``) prefixes everything: asset keys ``demo/frozen_pools``, group ``demo``, and
``demo__``-prefixed names for its partitions definition, job, sensor, ops and resources, so two
workspaces (even with one judge, i.e. one fingerprint) are different Dagster assets on one
instance. The unprefixed workspace (``SPLIT_ASSETS_CONFIG``, or a config no instance declares)
keeps the names of earlier releases: ``frozen_pools``, ``diag_fingerprint``, ``video_split``,
``split_pipeline``, ``register_current_fingerprint``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

UNPREFIXED_GROUP = "video_split"
ASSETS = ("canonical_predictions", "infra_t0_signals", "diagnosis_signals",
          "trainval_selection", "frozen_pools", "candidate_evaluation")
# the narrow resources a workspace's definitions declare (orchestration/resources.py)
SESSION, SIGNAL_STORE, HARNESS_DB, JUDGE_ENDPOINT, RUN_OPTIONS = (
    "session", "signal_store", "harness_db", "judge_endpoint", "run_options")


@dataclass(frozen=True)
class Names:
    """``name`` None: the unprefixed workspace."""

    name: str | None = None

    def _p(self, base: str) -> str:
        return f"{self.name}__{base}" if self.name else base

    @property
    def key_prefix(self) -> list[str]:
        return [self.name] if self.name else []

    def key(self, asset: str) -> Any:
        from dagster import AssetKey

        return AssetKey([*self.key_prefix, asset])

    @property
    def group(self) -> str:
        return self.name or UNPREFIXED_GROUP

    @property
    def partitions(self) -> str:
        """The dynamic partitions definition's name (one partition per fingerprint)."""
        return self._p("diag_fingerprint")

    @property
    def job(self) -> str:
        return self._p("split_pipeline")

    @property
    def sensor(self) -> str:
        return self._p("register_current_fingerprint")

    def op(self, base: str) -> str:
        return self._p(base)

    def resource(self, base: str) -> str:
        return self._p(base)
