"""``split_assets.loops.gepa``: gepa.optimize over an agent that is not a DSPy program, scored
and reflected on from the train pool's diagnoses, submitted to the Ladder under ``gepa``."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import gepa

from split_assets.loops.gepa import DiagnosisAdapter, candidate_sha256, gepa_sets, submit
from split_assets.loops.pools import LoopItem


class Hashing(DiagnosisAdapter):
    """An 'agent' whose answer is a hash of its prompt and the question: a new prompt moves
    its answers, as a real agent's would."""

    def run(self, candidate: dict[str, str], items: list[LoopItem]) -> list[str]:
        return ["ABCD"[hashlib.sha256((candidate["prompt"] + i.question_id).encode()).digest()[0]
                       % len(i.options)] for i in items]


def test_gepa_optimize_reflects_on_the_diagnoses(frozen: Path) -> None:
    trainset, valset = gepa_sets(frozen)
    assert trainset and valset
    assert not {i.video_id for i in trainset} & {i.video_id for i in valset}
    assert {i.pool for i in trainset + valset} == {"train"}
    assert gepa_sets(frozen) == (trainset, valset)  # the split's seed: the same slices
    assert gepa_sets(frozen, seed=12345) != (trainset, valset)
    shown: list[str] = []

    def reflection_lm(prompt: Any) -> str:
        shown.append(str(prompt))
        return f"```\nAnswer carefully, attempt {len(shown)}.\n```"

    adapter = Hashing(frozen)
    result = gepa.optimize(seed_candidate={"prompt": "Answer."}, trainset=trainset[:8],
                           valset=valset[:4], adapter=adapter, reflection_lm=reflection_lm,
                           max_metric_calls=24, reflection_minibatch_size=3,
                           skip_perfect_score=False, seed=0)
    assert shown  # GEPA reflected, on feedback written from the diagnoses
    assert any("the correct answer is" in p for p in shown)
    assert any("judge diagnosed" in p or "answered this question correctly" in p for p in shown)

    answer = submit(adapter, result.best_candidate, "gepa-cand", frozen)
    assert answer["submissions"] == 1 and "leaderboard_accuracy" in answer
    from split_assets.app.session import Session

    s = Session.open(frozen)
    with s.partition.store(read_only=True) as store:
        look = store.looks(s.partition.split_id, "validation")[-1]
    assert look.statistic["optimizer"] == "gepa"
    assert look.statistic["program_sha256"] == candidate_sha256(result.best_candidate)
