"""The judge's view of each wrong answer: question, prediction, trace, tree, skills and the
reference runs' evidence.

``CaseSource(inputs, preds, batched)`` receives the config's ``Inputs`` and the predictions to
diagnose; ``case(p)`` returns the ``JudgeCase`` either judge receives."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from split_assets.config_keys import config_key
from split_assets.errors import InputError
from split_assets.judge import JudgeCase
from split_assets.sources.harness_db import CanonicalPrediction
from split_assets.sources.trace_steps import TraceStep, opened_nodes
from split_assets.sources.video_store import VideoTree

if TYPE_CHECKING:
    from split_assets.workspace.inputs import Inputs


class CaseSource:
    """``full`` context fails loud up front when a trace or tree is missing. Up front (the dry
    run, a review sample) it reads every trace and parses trees once per video through the
    inputs. ``batched`` (a diagnosis pass) it reads the traces and trees of each leased
    batch as the batch is claimed (``load``) and forgets each question's once it is stored
    (``drop``): a worker's memory does not grow with the benchmark. A harness db's traces
    table rarely has an index, so each read is a scan of it (0.6 s at 2 million steps): one
    read takes the traces of the next ``TRACE_WINDOW`` questions in the pass's order, which
    the batches claimed next (this worker's, among the others') come from."""

    TRACE_WINDOW = 2048

    def __init__(self, inputs: Inputs, preds: list[CanonicalPrediction],
                 batched: bool = False) -> None:
        self.inputs = inputs
        self.benchmark = inputs.benchmark
        self.full = inputs.diag.context == "full" and bool(preds)
        self.batched = batched
        self.references = inputs.reference_evidence if preds else {}
        self.traces: dict[str, list[TraceStep]] = {}
        self._order = preds if batched else []
        self._position = {p.question_id: i for i, p in enumerate(self._order)}
        self._ahead: dict[str, list[TraceStep]] = {}  # read for the window, not claimed yet
        self._trees: dict[str, VideoTree] = {}
        self._tree_uses: Counter[str] = Counter()
        if not self.full:
            return
        if batched:
            from split_assets.sources.harness_traces import traced_question_ids

            traced = traced_question_ids(inputs.paths.harness_db, inputs.run_id)
            missing = [p.question_id for p in preds if p.question_id not in traced]
        else:
            self.traces = inputs.traces([p.question_id for p in preds])
            missing = [p.question_id for p in preds if not self.traces.get(p.question_id)]
        if missing:
            raise InputError(f"{len(missing)} wrong answer(s) have no trace in run "
                             f"{inputs.run_id!r} (e.g. {', '.join(missing[:5])})",
                             "harness db traces",
                             f"record the traces, or use {config_key('context')}: answer_only")
        self.skills = inputs.skills
        from split_assets.sources.video_store import first_missing_tree

        missing_tree = first_missing_tree(inputs.paths.store_dir,
                                          sorted({p.video_id for p in preds}))
        if missing_tree is not None:
            inputs.tree(missing_tree)  # raises the missing-tree error

    def load(self, preds: list[CanonicalPrediction]) -> None:
        """Read the traces and trees of a leased batch (batched full context only)."""
        self.take(preds, self.read(preds))

    def read(self, preds: list[CanonicalPrediction]) -> dict[str, list[TraceStep]] | None:
        """The reading part of ``load``, safe on another thread while the event loop runs
        (it changes nothing): the traces of the window from the batch's first question not
        read yet, or None when the window already read holds every one."""
        if not (self.full and self.batched):
            return None
        from split_assets.sources.harness_traces import load_traces

        unread = [p.question_id for p in preds
                  if p.question_id not in self.traces and p.question_id not in self._ahead]
        if not unread:
            return None
        start = min(self._position.get(q, len(self._order)) for q in unread)
        window = [p.question_id for p in self._order[start:start + self.TRACE_WINDOW]]
        return load_traces(self.inputs.paths.harness_db, self.inputs.run_id, unread + window)

    def take(self, preds: list[CanonicalPrediction],
             window: dict[str, list[TraceStep]] | None) -> None:
        """Hold the batch's traces (from ``window`` when one was read: it replaces the last)
        and its videos' trees."""
        if not (self.full and self.batched):
            return
        from split_assets.sources.video_store import load_tree

        if window is not None:
            self._ahead = window
        store_dir = self.inputs.paths.store_dir
        for p in preds:
            if p.question_id in self.traces:
                continue
            self.traces[p.question_id] = self._ahead.pop(p.question_id, [])
            if p.video_id not in self._trees:
                self._trees[p.video_id] = load_tree(store_dir, p.video_id)
            self._tree_uses[p.video_id] += 1

    def drop(self, p: CanonicalPrediction) -> None:
        """Forget a stored question's trace, and its video's tree when no other needs it."""
        if not (self.full and self.batched) or self.traces.pop(p.question_id, None) is None:
            return
        self._tree_uses[p.video_id] -= 1
        if self._tree_uses[p.video_id] <= 0:
            del self._tree_uses[p.video_id]
            self._trees.pop(p.video_id, None)

    def case(self, p: CanonicalPrediction) -> JudgeCase:
        question = self.benchmark.by_id[p.question_id]
        refs = self.references.get(p.question_id, ())
        if not self.full:
            return JudgeCase(question, p, reference_wrong=refs)
        if self.batched and p.question_id not in self.traces:
            self.load([p])  # asked outside a claimed batch
        tree = self._trees[p.video_id] if self.batched else self.inputs.tree(p.video_id)
        trace = self.traces[p.question_id]
        # either judge gets a trace whose opened nodes are all in its tree (the input digests
        # read traces through the same check)
        opened_nodes(trace, self.inputs.diag.rules.open_tool, tree.nodes,
                     p.question_id, p.video_id)
        return JudgeCase(question, p, trace, tree, self.skills, refs)

    def cases(self, preds: list[CanonicalPrediction]) -> list[JudgeCase]:
        return [self.case(p) for p in preds]
