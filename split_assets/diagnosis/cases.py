"""The judge's view of each wrong answer: question, prediction, trace, tree, skills and the
reference runs' evidence."""

from __future__ import annotations

from typing import TYPE_CHECKING

from split_assets.data.harness import CanonicalPrediction
from split_assets.errors import InputError
from split_assets.judge import JudgeCase

if TYPE_CHECKING:
    from split_assets.workspace import Workspace


class CaseSource:
    """``full`` context reads every trace and skill up front and fails loud when a trace or
    tree is missing; trees are parsed on first use (once per video, through the workspace), so
    diagnosis starts without waiting for all of them."""

    def __init__(self, ws: Workspace, preds: list[CanonicalPrediction]) -> None:
        self.ws = ws
        self.benchmark = ws.benchmark
        self.full = ws.loaded.config.diag.context == "full" and bool(preds)
        self.references = ws.reference_evidence if preds else {}
        if not self.full:
            return
        self.traces = ws.traces([p.question_id for p in preds])
        missing = [p.question_id for p in preds if not self.traces.get(p.question_id)]
        if missing:
            raise InputError(f"{len(missing)} wrong answer(s) have no trace in run "
                             f"{ws.run_id!r} (e.g. {', '.join(missing[:5])})",
                             "harness db traces",
                             "record the traces, or use diag.context: answer_only")
        self.skills = ws.skills
        from split_assets.data.store import first_missing_tree

        missing_tree = first_missing_tree(ws.loaded.paths.store_dir,
                                          sorted({p.video_id for p in preds}))
        if missing_tree is not None:
            ws.tree(missing_tree)  # raises the missing-tree error

    def case(self, p: CanonicalPrediction) -> JudgeCase:
        question = self.benchmark.by_id[p.question_id]
        refs = self.references.get(p.question_id, ())
        if not self.full:
            return JudgeCase(question, p, reference_wrong=refs)
        return JudgeCase(question, p, self.traces[p.question_id], self.ws.tree(p.video_id),
                         self.skills, refs)

    def cases(self, preds: list[CanonicalPrediction]) -> list[JudgeCase]:
        return [self.case(p) for p in preds]
