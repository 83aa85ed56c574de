"""What an optimizer's loop reads from a frozen split and sends back, without any optimizer's
package: each pool's items (question, options, the video's text context, the label), the
feedback of a train item written from the judge's diagnosis, two train-only slices for an
optimizer's own train and Pareto sets, and the two ways answers come back -- a Ladder
submission on validation and a look at test -- each recorded under the optimizer's name and
its program's digest.

Only the train pool's diagnoses are ever read; test items are built only inside
``LoopSplit.test_items`` for ``look_at_test``, never handed out as examples."""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from split_assets.app.session import Session
from split_assets.errors import UserError
from split_assets.store.ledger import tagged

POOLS = ("train", "validation")
TEST_LOOK_FIX = ("spend test on purpose with test_look(program, candidate_id, config): one look "
                 "within evaluation.test_looks_max")


@dataclass(frozen=True)
class LoopItem:
    """One question as a program answers it, and its label."""

    question_id: str
    video_id: str
    question: str
    options: tuple[str, ...]
    context: str  # the video's tree as text ('' when the store has no tree of it)
    answer: str
    pool: str


class LoopSplit:
    """A workspace's frozen split as a loop uses it (``config``: its video_split.yaml)."""

    def __init__(self, config: Path | str | None = None) -> None:
        self.session = Session.open(config)
        self.config = self.session.loaded.path
        from split_assets.evaluation.comparison import load_pools

        self.doc = load_pools(self.session.partition)
        self._contexts: dict[str, str] = {}

    @property
    def seed(self) -> int:
        return self.session.loaded.config.video_split.seed

    def items(self, pool: str) -> list[LoopItem]:
        """The pool's items in question-id order; test is refused."""
        if pool not in POOLS:
            raise UserError(f"examples of the {pool!r} pool refused: a loop gets train and "
                            "validation only (train for the optimizer, validation through "
                            "the Ladder)", "pool", TEST_LOOK_FIX if pool == "test"
                            else "pass 'train' or 'validation'")
        return self._items(pool)

    def test_items(self) -> list[LoopItem]:
        """The test pool's items: for a look at test only (``look_at_test``)."""
        return self._items("test")

    def _items(self, pool: str) -> list[LoopItem]:
        by_id = self.session.inputs.benchmark.by_id
        return [LoopItem(q, by_id[q].video_id, by_id[q].question, tuple(by_id[q].options),
                         self.context(by_id[q].video_id), by_id[q].answer, pool)
                for q in sorted(self.doc["pools"][pool])]

    def context(self, video_id: str) -> str:
        """The video's text context: its tree's captions in time order, one line each."""
        if video_id not in self._contexts:
            from split_assets.sources.video_store import load_tree, tree_path

            store = self.session.loaded.paths.store_dir
            text = ""
            if tree_path(store, video_id).is_file():
                nodes = sorted(load_tree(store, video_id).nodes.values(),
                               key=lambda n: (n.start_s, n.depth, n.id))
                text = "\n".join(f"[{n.start_s:.0f}-{n.end_s:.0f}s] {n.caption}"
                                 for n in nodes)
            self._contexts[video_id] = text
        return self._contexts[video_id]

    @cached_property
    def diagnoses(self) -> dict[str, Any]:
        """The judge's diagnosis of each train question the baseline got wrong (train's
        only: no other pool's row is kept)."""
        train = set(self.doc["pools"]["train"])
        return {r.question_id: r for r in self.session.partition.rows()
                if r.question_id in train}

    def train_slices(self, pareto_share: float = 0.3,
                     seed: int | None = None) -> tuple[list[LoopItem], list[LoopItem]]:
        """Two disjoint slices of train, split by video (every question of a video on one
        side), the second holding ``pareto_share`` of the videos: an optimizer's own train
        set and the set it scores candidates on (GEPA's valset), both train."""
        if not 0.0 < pareto_share < 1.0:
            raise UserError(f"pareto_share {pareto_share} is not between 0 and 1",
                            "pareto_share", "pass a share such as 0.3")
        items = self.items("train")
        videos = sorted({i.video_id for i in items})
        random.Random(self.seed if seed is None else seed).shuffle(videos)
        n = min(len(videos) - 1, max(1, math.ceil(pareto_share * len(videos))))
        pareto = set(videos[:n])
        return ([i for i in items if i.video_id not in pareto],
                [i for i in items if i.video_id in pareto])

    def feedback(self, item: LoopItem, predicted: str) -> tuple[float, str]:
        """The score of ``predicted`` (read by the workspace's letter rule) on a train item,
        and feedback written from the judge's diagnosis of the baseline's failure on it."""
        if item.pool != "train":
            raise UserError(f"feedback on a {item.pool} question refused: only train "
                            "questions carry the judge's diagnoses", "feedback_metric",
                            "score validation through submit(), test through test_look()")
        letter = self.letter(item, predicted)
        right = letter == item.answer
        head = (f"Correct: the answer is {item.answer}." if right else
                f"Wrong: the program answered {letter or 'nothing readable'}; the correct "
                f"answer is {item.answer}.")
        return (1.0 if right else 0.0), head + " " + diagnosis_text(self.diagnoses.get(
            item.question_id))

    def letter(self, item: LoopItem, predicted: str) -> str:
        from split_assets.sources.letters import letter_of

        rule = self.session.inputs.benchmark.letter_rule
        return letter_of(rule, predicted, predicted, list(item.options))

    def submit(self, candidate: str, answers: dict[str, str], optimizer: str | None,
               program_sha256: str | None) -> dict[str, Any]:
        """Validation answers to the Ladder, as run ``candidate`` (not listed in the config)."""
        from split_assets.app.session import feedback_of_answers

        wanted = set(self.doc["pools"]["validation"])
        if set(answers) != wanted:
            raise UserError(f"a submission must answer the {len(wanted)} validation questions "
                            f"exactly (got {len(answers)}, {len(set(answers) - wanted)} "
                            "outside the pool)", "answers", "answer every validation item")
        with _tag(optimizer, program_sha256):
            return feedback_of_answers(self.config, candidate, answers, register_run=False)

    def look_at_test(self, candidate: str, answers: Callable[[list[LoopItem]], dict[str, str]],
                     optimizer: str | None, program_sha256: str | None) -> dict[str, Any]:
        """One look at test: refused before anything runs when the budget is spent; else
        ``answers`` of the test items recorded as run ``candidate`` (the import's look, held
        to the budget), compared with the baseline as ``compare --pool test --json`` does."""
        from split_assets.app.import_gate import import_gate
        from split_assets.evaluation.claims import record
        from split_assets.evaluation.comparison import compare_runs
        from split_assets.importing.workspace_runs import finish_import
        from split_assets.importing.workspace_setup import Answer

        _check_test_budget(self.session)
        given = answers(self.test_items())
        with _tag(optimizer, program_sha256):
            finish_import(Path("<python>"), candidate, self.config.parent,
                          {q: Answer(None, text, None) for q, text in given.items()},
                          replace=False, partial=True, role="candidate", built=None,
                          gate=import_gate(self.config.parent), register_run=False)
            s = Session.open(self.config)
            evaluation = s.loaded.config.evaluation
            control = evaluation.control_run
            report = compare_runs(s.inputs, s.partition, candidate, control, ("test",),
                                  control_where="evaluation.control_run")
            record(s.partition, report, "compare", evaluation.test_looks_max, False)
        return report

def diagnosis_text(row: Any) -> str:
    """What the judge said of the baseline's failure on a train question (None: the
    baseline answered it right, or its wrong answer is not diagnosed)."""
    if row is None:
        return "The baseline agent answered this question correctly (no diagnosis)."
    if row.infra or row.tier == "T0":
        return ("The baseline agent's run failed on this question for an infrastructure "
                "reason (T0: no usable answer), not a reasoning error: there is no diagnosis "
                "of its thinking.")
    if row.degraded:
        return ("The judge's diagnosis of the baseline agent's failure here is degraded (the "
                "judge's call failed or its answer was unusable): do not rely on it.")
    kind = {"T1": "a lapse (T1: a misreading or a flawed inference)",
            "T2": "a defect a loop can fix (T2: a skill not followed, evidence not opened, a "
                  "search budget run out)"}.get(row.tier, row.tier)
    parts = [f"When the baseline agent got this wrong, the judge diagnosed {kind}"]
    if row.error_type:
        parts.append(f"error type {row.error_type}")
    if row.cause_category:
        parts.append(f"{'defect' if row.tier == 'T2' else 'cause'} category "
                     f"{row.cause_category}")
    if row.evolution_target:
        parts.append(f"what to improve: {row.evolution_target}")
    text = "; ".join(parts) + "."
    return text + (f" The judge's rationale: {row.rationale}" if row.rationale else "")


@contextmanager
def _tag(optimizer: str | None, program_sha256: str | None) -> Iterator[None]:
    with tagged(optimizer=optimizer or "unnamed", program_sha256=program_sha256):
        yield


def _check_test_budget(s: Session) -> None:
    """Refuse a look at test before anything runs when the budget is spent."""
    from split_assets.evaluation.claims import family
    from split_assets.evaluation.shared_budget import budget_now
    from split_assets.sources.harness_db import predictions_digest

    budget, others = budget_now(s.loaded.path, s.loaded.config.evaluation.test_looks_max,
                                predictions_digest(s.inputs.predictions),
                                s.partition.split_id)
    with s.partition.store(read_only=True) as store:
        looks = store.looks(s.partition.split_id, "test") + others
    spent = len(family(looks))
    if budget.budget is not None and spent >= budget.budget:
        raise UserError(f"test_look refused: the {spent} look(s) of "
                        f"evaluation.test_looks_max {budget.budget} are spent on split "
                        f"{s.partition.split_id}; nothing was run or written",
                        "test_look", "steer on validation with submit(); a claim on test "
                        "needs a look the budget still holds")
