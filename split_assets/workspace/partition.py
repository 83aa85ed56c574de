"""``Partition``: the frozen identity of one split -- the loaded config, the baseline run, the
diagnosis fingerprint (the Dagster partition key), the split id -- and where its files go.

Receives a ``LoadedConfig`` and a ``Fingerprint``; gives the split folder and its files, the
signal store, the partition's signal rows (read fresh on every call: nothing is cached, so no
step ever sees rows another step has since changed) and the manifest of what was frozen. It
knows no judge and reads no benchmark input (that is ``Inputs``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from split_assets.errors import ConfigError, InputError
from split_assets.settings import QUIET_KEYS, LoadedConfig, VideoSplitConfig
from split_assets.sources.harness_db import CanonicalPrediction, wrong_to_diagnose
from split_assets.split.freeze import split_id
from split_assets.split.layout import SplitFiles, selection_path
from split_assets.store.signals import SignalRow, SignalStore
from split_assets.workspace.fingerprint import Fingerprint
from split_assets.workspace.settings_view import SettingsView


@dataclass(frozen=True)
class Partition(SettingsView):
    """One (baseline run, fingerprint, split settings): what a run materializes."""

    loaded: LoadedConfig
    fingerprint: Fingerprint

    @property
    def key(self) -> str:
        """The Dagster partition key: the fingerprint."""
        return self.fingerprint.key

    @property
    def run_id(self) -> str:
        """The baseline run the split is made from."""
        return self.loaded.config.video_split.baseline_run_id

    @property
    def split_id(self) -> str:
        vs = self.loaded.config.video_split
        return split_id(vs.baseline_run_id, vs.identity())

    @property
    def out_dir(self) -> Path:
        return self.loaded.paths.out_dir / self.key / self.split_id

    @property
    def files(self) -> SplitFiles:
        """pools.json, split_manifest.json and evaluation.json of this split."""
        return SplitFiles(self.out_dir)

    @property
    def selection_file(self) -> Path:
        """trainval_selection's choice, read by frozen_pools (``split/layout.py``)."""
        return selection_path(self.loaded.paths.out_dir, self.key, self.split_id)

    # ---------------------------------------------------------------- signals -----------

    @contextmanager
    def store(self, read_only: bool = False, required: bool = False) -> Iterator[SignalStore]:
        """The signal store; a read-only one creates nothing (the dry run, verify)."""
        with open_signals(self.loaded, read_only, required) as store:
            yield store

    def rows(self, required: bool = False) -> list[SignalRow]:
        """This partition's signal rows now; ``required``: a missing store is an error."""
        with self.store(read_only=True, required=required) as store:
            return store.rows(self.run_id, self.key)

    # ---------------------------------------------------------------- frozen files ------

    def settled_degraded(self) -> frozenset[str]:
        """Degraded questions the split already frozen for this partition accepted
        (``--allow-degraded``): its manifest lists them."""
        files = self.files
        if not files.pools.is_file() or not files.manifest.is_file():
            return frozenset()
        try:
            degraded = json.loads(files.manifest.read_bytes()).get("degraded_question_ids", [])
        except (OSError, ValueError):
            return frozenset()
        return frozenset(str(q) for q in degraded) if isinstance(degraded, list) else frozenset()

    def frozen_manifest(self) -> dict[str, Any]:
        """The manifest of this split's frozen files (an error when nothing is frozen)."""
        files, path = self.files, self.loaded.path
        if not files.pools.is_file() or not files.manifest.is_file():
            raise InputError(f"no frozen split at {files.folder}", str(path),
                             f"freeze it first: split-assets run --config {path}")
        try:
            return json.loads(files.manifest.read_bytes())
        except ValueError:
            raise InputError(f"{files.manifest.name} is not a manifest written by split-assets",
                             str(files.manifest), "restore it from the run that froze the split"
                             ) from None


def stale_partition(current: Partition, key: str,
                    preds: list[CanonicalPrediction]) -> Partition:
    """Partition ``key`` of an earlier config, allowed only where no judge is needed: its
    components are recorded in the signal store and each wrong answer of ``preds`` a judge
    sees has a finished diagnosis under it. It shares the current split settings and carries
    ``key``'s recorded components."""
    with current.store(read_only=True) as store:
        components = store.fingerprint_components(key)
        done = store.done_question_ids(current.run_id, key) if components is not None else set()
    open_ = [p.question_id for p in wrong_to_diagnose(preds) if p.question_id not in done]
    if components is None or open_:
        why = ("it was never diagnosed with this signal store" if components is None else
               f"{len(open_)} wrong answer(s) have no finished diagnosis under it (e.g. "
               f"{', '.join(open_[:3])}), and a re-freeze may not call a judge")
        raise ConfigError(
            f"partition {key} is not the fingerprint of the current config ({current.key}): "
            f"{why}", str(current.loaded.path),
            f"materialize partition {current.key} (the launch dialog offers it), or restore the "
            f"config that made {key}")
    return Partition(current.loaded, Fingerprint(key, components))


@contextmanager
def open_signals(loaded: LoadedConfig, read_only: bool = False,
                 required: bool = False) -> Iterator[SignalStore]:
    """A config's signal store, closed when the generator ends (``Partition.store``)."""
    from split_assets.store.opening import open_store

    store = open_store(loaded.paths.signals_db, read_only=read_only, required=required)
    try:
        yield store
    finally:
        store.close()


def config_snapshot(loaded: LoadedConfig) -> dict[str, Any]:
    """The config as run, paths relative to the config file's folder (the manifest's)."""
    snap = loaded.config.model_dump(mode="json")
    for key in QUIET_KEYS:  # at their defaults, as before they existed
        field = VideoSplitConfig.model_fields[key]
        if snap["video_split"][key] == field.get_default(call_default_factory=True):
            del snap["video_split"][key]
    paths = loaded.paths
    snap["paths"] = {name: loaded.relative(getattr(paths, name))
                     for name in ("questions_dir", "harness_db", "store_dir", "signals_db",
                                  "out_dir")}
    if snap["diag"].get("prompts_dir") is None:
        snap["diag"]["prompts_dir"] = "(shipped)"
    return snap
