"""``Inputs``: the only reader of what a workspace's config points at -- the benchmark, the
harness db (the baseline's predictions and traces, other runs' outcomes), the trees and the
skills. Each is read at most once and kept for the run or command; it knows no judge and no
signal store, so a stale partition's view shares the very same object.

Receives a ``LoadedConfig``; returns parsed, checked data (``Benchmark``, canonical
predictions, trees, traces, outcomes), and, given a partition's signal rows, the split
problem and the digests of what it consumed. The shell's ``Session`` holds one; core functions
receive it when they read inputs."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from split_assets.config_keys import config_key
from split_assets.errors import ConfigError
from split_assets.settings import LoadedConfig
from split_assets.sources.benchmark import Benchmark, load_benchmark
from split_assets.sources.harness_db import CanonicalPrediction, canonical_predictions
from split_assets.sources.run_outcomes import RunOutcomes
from split_assets.workspace.other_runs import OtherRuns
from split_assets.workspace.settings_view import SettingsView

if TYPE_CHECKING:
    from split_assets.sources.trace_steps import TraceStep
    from split_assets.sources.video_store import Skill, VideoTree
    from split_assets.split.problem import SplitProblem
    from split_assets.store.signals import SignalRow
    from split_assets.workspace.fingerprint import Fingerprint


class Inputs(OtherRuns, SettingsView):
    """The inputs of one loaded config, each parsed on first use."""

    def __init__(self, loaded: LoadedConfig) -> None:
        self.loaded = loaded
        self._trees: dict[str, VideoTree] = {}
        self._traces: dict[str, list[TraceStep]] = {}
        self._outcomes: dict[str, RunOutcomes] = {}
        self._context_digests: dict[tuple[tuple[tuple[str, str], ...], bool],
                                    dict[str, str]] = {}
        # the split's view of the latest signal rows (a pure function of them: steps of one run
        # that read the same rows share it; rows that changed make a new one)
        self._split_views: dict[tuple[str, str], tuple[tuple[SignalRow, ...], Any]] = {}

    @property
    def run_id(self) -> str:
        """The baseline run the split is made from."""
        return self.loaded.config.video_split.baseline_run_id

    @cached_property
    def benchmark(self) -> Benchmark:
        """The benchmark, with floor_k keys and balance fields checked against it."""
        vs = self.loaded.config.video_split
        benchmark = load_benchmark(self.loaded.paths.questions_dir, vs.levels, vs.letter_rule)
        check_floor_keys(vs.floor_k, benchmark.task_types)
        self.__dict__["balance"] = self._balance_of(benchmark)  # checked with the benchmark
        return benchmark

    @cached_property
    def balance(self) -> dict[str, tuple[str, ...]]:
        """Each question's values of the ``balance`` fields (checked with the benchmark)."""
        return self._balance_of(self.benchmark)

    def _balance_of(self, benchmark: Benchmark) -> dict[str, tuple[str, ...]]:
        from split_assets.split.problem_inputs import balance_values

        return balance_values(benchmark, self.loaded.config.video_split.balance)

    @cached_property
    def predictions(self) -> list[CanonicalPrediction]:
        """The baseline's canonical predictions, one per benchmark question."""
        vs = self.loaded.config.video_split
        return canonical_predictions(self.loaded.paths.harness_db, vs.baseline_run_id,
                                     self.benchmark, vs.infra_stop_reasons,
                                     vs.missing_predictions)

    # ---------------------------------------------------------------- judge context -----

    @cached_property
    def skills(self) -> list[Skill]:
        from split_assets.sources.video_store import load_skills

        return load_skills(self.loaded.paths.store_dir, self.loaded.config.diag.skills_version)

    def tree(self, video_id: str) -> VideoTree:
        """A video's tree, parsed on first use."""
        from split_assets.sources.video_store import load_tree

        if video_id not in self._trees:
            self._trees[video_id] = load_tree(self.loaded.paths.store_dir, video_id)
        return self._trees[video_id]

    def parsed_tree(self, video_id: str) -> VideoTree | None:
        """A video's tree if it was parsed already (else None: nothing is read)."""
        return self._trees.get(video_id)

    def traces(self, question_ids: list[str]) -> dict[str, list[TraceStep]]:
        """The baseline's traces of these questions (each read once)."""
        from split_assets.sources.harness_traces import load_traces

        wanted = [q for q in question_ids if q not in self._traces]
        if wanted:
            found = load_traces(self.loaded.paths.harness_db, self.run_id, wanted)
            self._traces.update((q, found.get(q, [])) for q in wanted)
        return {q: self._traces[q] for q in question_ids}


    # ---------------------------------------------------------------- the split's view ----

    def split_problem(self, rows: list[SignalRow], fingerprint: str) -> SplitProblem:
        """The split problem of the baseline's predictions joined with ``rows`` (the signal
        rows of partition ``fingerprint``)."""
        from split_assets.split.problem_inputs import split_problem

        return self._of_rows("problem", fingerprint, rows, lambda: split_problem(
            self.predictions, rows, self.balance, self.loaded.config.video_split,
            str(self.loaded.paths.signals_db), fingerprint, self.balanced_runs))

    def input_digests(self, rows: list[SignalRow], fingerprint: Fingerprint,
                      cached: bool = False) -> dict[str, str]:
        """Digests of the inputs a split of ``rows`` consumed, none depending on file or row
        order; in ``full`` context (the partition's judge) also the skills, trees and traces
        the judge read. ``cached``: the trees' and traces' digests may come from the cache of
        an earlier run whose files are unchanged (``store/digest_cache.py``; a run uses it,
        ``verify --recompute`` never)."""
        from functools import partial

        from split_assets.split.problem_inputs import input_digests

        context = (partial(self.context_digests, cached=cached)
                   if fingerprint.components["context"] == "full" else None)
        kind = "digests, cache allowed" if cached else "digests"
        return dict(self._of_rows(kind, fingerprint.key, rows, lambda: input_digests(
            self.benchmark, self.predictions, rows, context, self.balanced_predictions())))

    def _of_rows(self, what: str, key: str, rows: list[SignalRow], make: Callable[[], Any]
                 ) -> Any:
        """``make()``, kept for these very rows (the last rows seen per partition and kind)."""
        frozen, kept = tuple(rows), self._split_views.get((what, key))
        if kept is not None and kept[0] == frozen:
            return kept[1]
        value = make()
        self._split_views[(what, key)] = (frozen, value)
        return value

    def context_digests(self, questions: Iterable[tuple[str, str]],
                        cached: bool = False) -> dict[str, str]:
        """Skills, trees and traces the judge read for these (question, video) pairs (kept
        per set of pairs: they depend on the inputs only; ``cached``: the trees' and traces'
        from the digest cache while their files are unchanged)."""
        from split_assets.lib.canonical import digest_of
        from split_assets.sources.video_store import skills_digest, tree_path
        from split_assets.split.layout import digest_cache_path
        from split_assets.store.digest_cache import cached_digests, wal_of

        pairs = tuple(questions)
        if (pairs, cached) in self._context_digests:
            return self._context_digests[(pairs, cached)]
        paths = self.loaded.paths
        open_tool = self.loaded.config.diag.rules.open_tool
        files = wal_of(paths.harness_db) + [tree_path(paths.store_dir, v)
                                            for v in sorted({v for _, v in pairs})]
        digests = {"skills": skills_digest(self.skills), **cached_digests(
            digest_cache_path(paths.out_dir) if cached else None,
            digest_of(["trees+traces", _digest_code(), self.run_id, open_tool, pairs]), files,
            lambda: _trees_and_traces(self, pairs))}
        self._context_digests[(pairs, cached)] = digests
        return digests


def check_floor_keys(floor_k: dict[str, int], task_types: list[str]) -> None:
    """Every floor_k key must be a task type of the benchmark (a typo would silently floor 0)."""
    for key in sorted(floor_k):
        if key not in task_types:
            close = difflib.get_close_matches(key, task_types, n=3, cutoff=0.4)
            hint = (f"did you mean {' or '.join(repr(c) for c in close)}?" if close
                    else f"task types are: {', '.join(task_types)}")
            raise ConfigError(f"floor_k names task type {key!r}, which is not in the benchmark",
                              config_key("floor_k"), hint)


def _trees_and_traces(inputs: Inputs, pairs: tuple[tuple[str, str], ...]) -> dict[str, str]:
    """The digests of the trees and traces of these pairs, read and checked (a trace
    opening a node its tree lacks is refused)."""
    from split_assets.lib.canonical import digest_of
    from split_assets.sources.harness_traces import trace_digests
    from split_assets.sources.video_store import load_tree

    trees: dict[str, str] = {}

    def nodes_of(video: str) -> Iterable[str]:
        # a tree not parsed yet is parsed (checked) for its digest but not kept: at scale
        # the trees of every video would not fit beside the rest
        tree = inputs.parsed_tree(video) or load_tree(inputs.loaded.paths.store_dir, video)
        trees[video] = tree.digest
        return tree.nodes

    traces = trace_digests(inputs.loaded.paths.harness_db, inputs.run_id, list(pairs), nodes_of,
                           inputs.loaded.config.diag.rules.open_tool)
    return {"trees": digest_of(trees), "traces": digest_of(traces)}


def _digest_code() -> str:
    """The source of the code that computes the trees' and traces' digests: a cached digest
    of another release's code is never reused."""
    import hashlib

    from split_assets.sources import harness_db, harness_traces, trace_steps, video_store

    modules = (harness_db, harness_traces, trace_steps, video_store)
    return hashlib.sha256(b"".join(Path(m.__file__).read_bytes() for m in modules)).hexdigest()
