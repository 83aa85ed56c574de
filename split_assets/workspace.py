"""The Workspace: one config file's run, built once per Dagster run or CLI command.

It holds the validated config, the judge and its fingerprint, the paths of this split, the
signal rows, the split problem and the frozen files; everything the config points at is read
through its ``Inputs`` (``inputs.py``). Nothing is cached beyond one run or command: the Dagster
resource builds a new one for each run (``defs/resources.py``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from split_assets.config import LoadedConfig, load_config
from split_assets.data.benchmark import Benchmark
from split_assets.data.harness import CanonicalPrediction
from split_assets.data.signals import SignalRow, SignalStore
from split_assets.errors import ConfigError, InputError
from split_assets.inputs import Inputs
from split_assets.split.layout import SplitFiles

if TYPE_CHECKING:
    from split_assets.data.harness import TraceStep
    from split_assets.data.store import Skill, VideoTree
    from split_assets.diagnosis.cases import CaseSource
    from split_assets.diagnosis.plan import DiagnosisPlan
    from split_assets.fingerprint import Fingerprint
    from split_assets.judge import Judge
    from split_assets.split.problem import SplitProblem


class Workspace:
    """A config file and what it describes; each loader runs at most once."""

    def __init__(self, config_path: Path | str | None = None,
                 loaded: LoadedConfig | None = None) -> None:
        self._path = Path(config_path) if config_path is not None else None
        if loaded is not None:
            self.__dict__["loaded"] = loaded
        self._rows: list[SignalRow] | None = None
        self._problem: SplitProblem | None = None

    @classmethod
    def open(cls, config_path: Path | str | None = None) -> Workspace:
        """Load and validate the config and build its judge now (a bad config fails here,
        with one line; the openai judge starts its TLS context in the background while the
        inputs load)."""
        ws = cls(loaded=load_config(config_path))
        ws.judge  # noqa: B018 - built for its side effects, as documented
        return ws

    # ---------------------------------------------------------------- config ------------

    @cached_property
    def loaded(self) -> LoadedConfig:
        return load_config(self._path)

    @property
    def config_path(self) -> Path:
        return self.loaded.path

    @cached_property
    def judge(self) -> Judge:
        from split_assets.judge import build_judge

        return build_judge(self.loaded.config.diag)

    @cached_property
    def fingerprint(self) -> Fingerprint:
        from split_assets.fingerprint import compute_fingerprint

        return compute_fingerprint(self.loaded, self.judge)

    @property
    def is_stale(self) -> bool:
        """A view of a stale partition (``stale_view``): no judge, stored diagnoses only."""
        return isinstance(self.__dict__.get("judge"), _NoJudge)

    @property
    def run_id(self) -> str:
        return self.inputs.run_id

    @cached_property
    def split_id(self) -> str:
        from split_assets.split.freeze import split_id

        vs = self.loaded.config.video_split
        return split_id(vs.baseline_run_id, vs.identity())

    @property
    def out_dir(self) -> Path:
        return self.loaded.paths.out_dir / self.fingerprint.key / self.split_id

    @property
    def files(self) -> SplitFiles:
        """pools.json, split_manifest.json and evaluation.json of this split."""
        return SplitFiles(self.out_dir)

    @property
    def selection_file(self) -> Path:
        """trainval_selection's choice, read by frozen_pools (``split/layout.py``)."""
        from split_assets.split.layout import selection_path

        return selection_path(self.loaded.paths.out_dir, self.fingerprint.key, self.split_id)

    def check_partition(self, partition_key: str) -> Workspace:
        """The workspace of a partition: this one when it is the config's fingerprint; for
        another fingerprint (a stale partition), a judge-free view that may only re-freeze the
        split from the diagnoses stored under it (``stale_view``)."""
        if partition_key == self.fingerprint.key:
            return self
        views: dict[str, Workspace] = self.__dict__.setdefault("_views", {})
        if partition_key not in views:
            views[partition_key] = self.stale_view(partition_key)
        return views[partition_key]

    def stale_view(self, key: str) -> Workspace:
        """Partition ``key`` of an earlier config: allowed only where no judge is needed --
        its components are recorded in the signal store and every wrong non-INFRA answer has a
        finished diagnosis under it. The view shares this config's split settings and inputs,
        carries ``key``'s recorded components, and has no judge."""
        from split_assets.diagnosis.plan import wrong_to_diagnose
        from split_assets.fingerprint import Fingerprint

        current = self.fingerprint.key
        with self.store(read_only=True) as store:
            components = store.fingerprint_components(key)
            done = (store.done_question_ids(self.run_id, key) if components is not None
                    else set())
        open_ = [p.question_id for p in wrong_to_diagnose(self.predictions)
                 if p.question_id not in done]
        if components is None or open_:
            why = ("it was never diagnosed with this signal store" if components is None else
                   f"{len(open_)} wrong answer(s) have no finished diagnosis under it (e.g. "
                   f"{', '.join(open_[:3])}), and a re-freeze may not call a judge")
            raise ConfigError(
                f"partition {key} is not the fingerprint of the current config ({current}): "
                f"{why}", str(self.loaded.path),
                f"materialize partition {current} (the launch dialog offers it), or restore the "
                f"config that made {key}")
        view = Workspace(loaded=self.loaded)
        view.__dict__["inputs"] = self.inputs  # the same inputs, read once
        view.__dict__["fingerprint"] = Fingerprint(key, components)
        view.__dict__["judge"] = _NoJudge(key, current)
        return view

    # ---------------------------------------------------------------- inputs ------------

    @cached_property
    def inputs(self) -> Inputs:
        """The config's inputs (``inputs.py``), shared with every stale view of this config."""
        return Inputs(self.loaded)

    @property
    def benchmark(self) -> Benchmark:
        return self.inputs.benchmark

    @property
    def balance(self) -> dict[str, tuple[str, ...]]:
        return self.inputs.balance

    @property
    def predictions(self) -> list[CanonicalPrediction]:
        return self.inputs.predictions

    @property
    def reference_evidence(self) -> dict[str, tuple[bool | None, ...]]:
        return self.inputs.reference_evidence

    # ---------------------------------------------------------------- signals -----------

    @contextmanager
    def store(self, read_only: bool = False, required: bool = False) -> Iterator[SignalStore]:
        """The signal store; a read-only one creates nothing (the dry run, verify)."""
        from split_assets.data.signals_pg import open_store

        store = open_store(self.loaded.paths.signals_db, read_only=read_only, required=required)
        try:
            yield store
        finally:
            store.close()

    def recorded_components(self, key: str) -> dict[str, Any] | None:
        """The fingerprint components the signal store recorded for ``key`` (None: never)."""
        with self.store(read_only=True) as store:
            return store.fingerprint_components(key)

    def signal_rows(self, required: bool = False) -> list[SignalRow]:
        """This partition's signal rows (read once until the next write through here);
        ``required``: a missing store is an error, not an empty one."""
        if self._rows is None:
            with self.store(read_only=True, required=required) as store:
                self._rows = store.rows(self.run_id, self.fingerprint.key)
        return self._rows

    def signals_changed(self) -> None:
        """Forget the rows and what was derived from them (after a write)."""
        self._rows = None
        self._problem = None
        self.__dict__.pop("input_digests", None)

    def diagnosis_plan(self, store: SignalStore) -> DiagnosisPlan:
        """What a run diagnoses now: the dry run prints it, the run does it."""
        from split_assets.diagnosis.plan import plan_diagnosis

        return plan_diagnosis(self.predictions,
                              store.done_question_ids(self.run_id, self.fingerprint.key),
                              self.settled_degraded())

    def case_source(self, preds: list[CanonicalPrediction],
                    batched: bool = False) -> CaseSource:
        """The judge's view of ``preds`` (a missing trace or tree fails here); ``batched``:
        traces and trees are read per leased batch (a diagnosis pass)."""
        from split_assets.diagnosis.cases import CaseSource

        return CaseSource(self, preds, batched)

    def settled_degraded(self) -> frozenset[str]:
        """Degraded questions the split already frozen for this config accepted
        (``--allow-degraded``): its manifest lists them."""
        files = self.files
        if not files.pools.is_file() or not files.manifest.is_file():
            return frozenset()
        try:
            degraded = json.loads(files.manifest.read_bytes()).get("degraded_question_ids", [])
        except (OSError, ValueError):
            return frozenset()
        return frozenset(str(q) for q in degraded) if isinstance(degraded, list) else frozenset()

    # ---------------------------------------------------------------- split -------------

    def problem(self) -> SplitProblem:
        """The split problem of the current signal rows."""
        if self._problem is None:
            from split_assets.split.inputs import split_problem

            self._problem = split_problem(self.predictions, self.signal_rows(), self.balance,
                                          self.loaded.config.video_split,
                                          str(self.loaded.paths.signals_db),
                                          self.fingerprint.key)
        return self._problem

    @cached_property
    def input_digests(self) -> dict[str, str]:
        """Digests of the inputs the split consumed, none depending on file or row order."""
        from split_assets.split.inputs import input_digests

        full = self.fingerprint.components["context"] == "full"  # the partition's judge
        return input_digests(self.benchmark, self.predictions, self.signal_rows(),
                             self._context_digests if full else None)

    def _context_digests(self, questions: list[tuple[str, str]]) -> dict[str, str]:
        """Skills, trees and traces the judge read for these (question, video) pairs."""
        from split_assets.data.harness import trace_digests
        from split_assets.data.store import load_tree, skills_digest
        from split_assets.lib.canonical import digest_of

        trees: dict[str, str] = {}

        def nodes_of(video: str) -> Iterable[str]:
            # a tree not parsed yet is parsed (checked) for its digest but not kept: at scale
            # the trees of every video would not fit beside the rest
            tree = self.inputs.parsed_tree(video) or load_tree(self.loaded.paths.store_dir,
                                                               video)
            trees[video] = tree.digest
            return tree.nodes

        paths = self.loaded.paths
        traces = trace_digests(paths.harness_db, self.run_id, questions, nodes_of,
                               self.loaded.config.diag.rules.open_tool)
        return {"skills": skills_digest(self.skills), "trees": digest_of(trees),
                "traces": digest_of(traces)}

    # ---------------------------------------------------------------- judge context -----

    @property
    def skills(self) -> list[Skill]:
        return self.inputs.skills

    def tree(self, video_id: str) -> VideoTree:
        return self.inputs.tree(video_id)

    def traces(self, question_ids: list[str]) -> dict[str, list[TraceStep]]:
        return self.inputs.traces(question_ids)

    def config_snapshot(self) -> dict[str, Any]:
        """The config as run, paths relative to the config file's folder."""
        snap = self.loaded.config.model_dump(mode="json")
        paths = self.loaded.paths
        snap["paths"] = {name: self.loaded.relative(getattr(paths, name))
                         for name in ("questions_dir", "harness_db", "store_dir", "signals_db",
                                      "out_dir")}
        if snap["diag"].get("prompts_dir") is None:
            snap["diag"]["prompts_dir"] = "(shipped)"
        return snap

    def frozen_manifest(self) -> dict[str, Any]:
        """The manifest of this split's frozen files (an error when nothing is frozen)."""
        files = self.files
        if not files.pools.is_file() or not files.manifest.is_file():
            raise InputError(f"no frozen split at {files.folder}", str(self.loaded.path),
                             f"freeze it first: split-assets run --config {self.loaded.path}")
        try:
            return json.loads(files.manifest.read_bytes())
        except ValueError:
            raise InputError(f"{files.manifest.name} is not a manifest written by split-assets",
                             str(files.manifest), "restore it from the run that froze the split"
                             ) from None


class _NoJudge:
    """A stale partition's judge: re-freezing from stored diagnoses never needs one."""

    def __init__(self, key: str, current: str) -> None:
        self.key, self.current = key, current

    def __getattr__(self, name: str) -> Any:
        raise ConfigError(f"partition {self.key} is stale: it can be re-frozen from its stored "
                          "diagnoses, not diagnosed again", f"judge of {self.key}",
                          f"materialize partition {self.current}, the current config's")
