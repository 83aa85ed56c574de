"""The loop at the other end of the split, with DSPy's real client and GEPA against the
project's OpenAI-compatible test server: what the optimizer saw (from the server's request
log), what the Ladder and the ledger recorded, and what is refused."""

from __future__ import annotations

import importlib.util
import sqlite3
from pathlib import Path
from typing import Any

import dspy  # the dev extra holds it (make test installs it)
import pytest

from split_assets.app.session import Session
from split_assets.errors import UserError
from split_assets.evaluation.claims import family
from split_assets.loops import dspy as loops
from testkit.llm_server import FakeLLM
from testkit.program_replies import request_kind, sections

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "dspy_gepa_loop.py"


def _example() -> Any:
    spec = importlib.util.spec_from_file_location("dspy_gepa_loop", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _ledger(config: Path, pool: str) -> list[Any]:
    s = Session.open(config)
    with s.partition.store(read_only=True) as store:
        return store.looks(s.partition.split_id, pool)


def test_the_example_loop_sees_only_train_and_spends_test_once(
        frozen: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    split = loops.LoopSplit(frozen)
    pool_of = {}  # each video's text context -> its pool (the demo repeats question texts)
    for pool in ("train", "validation"):
        for item in split.items(pool):
            pool_of[item.context] = pool
    for item in split.test_items():
        pool_of[item.context] = "test"
    assert "" not in pool_of and len(pool_of) == 60  # one context per video, each in one pool
    config_before = frozen.read_bytes()

    sent_by: list[tuple[str, int, int]] = []  # (what, first request, end) of each submission
    real = loops.answer_all

    def recorded(program: Any, items: list[Any], num_threads: Any) -> dict[str, str]:
        start = len(llm.requests)
        try:
            return real(program, items, num_threads)
        finally:
            sent_by.append((items[0].pool, start, len(llm.requests)))

    monkeypatch.setattr(loops, "answer_all", recorded)
    with FakeLLM() as llm:
        monkeypatch.setenv("OPENAI_BASE_URL", llm.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        code = _example().main(["--config", str(frozen), "--metric-calls", "24", "--train", "6",
                                "--pareto", "3", "--threads", "2"])
    assert code == 0
    out = capsys.readouterr().out
    assert "leaderboard accuracy" in out and "card=" in out

    kinds = [request_kind(body) for body in llm.requests]
    assert kinds.count("reflection") >= 1 and "judge" not in kinds
    windows = [(start, end) for _, start, end in sent_by]
    assert [what for what, _, _ in sent_by] == ["validation", "validation", "test"]
    for index, (body, kind) in enumerate(zip(llm.requests, kinds, strict=True)):
        text = "\n".join(str(m.get("content")) for m in body["messages"])
        seen = {pool for context, pool in pool_of.items() if context in text}
        inside = any(start <= index < end for start, end in windows)
        if kind == "reflection" or not inside:  # the optimizer's own calls: train only
            assert seen <= {"train"}, (index, kind, seen)
        else:
            context = sections(text).get("context")
            assert pool_of[context] != "train"
    n_val, n_test = len(split.items("validation")), len(split.test_items())
    assert [end - start for start, end in windows] == [n_val, n_val, n_test]

    feedback = [look for look in _ledger(frozen, "validation") if look.source == "feedback"]
    assert [look.statistic["optimizer"] for look in feedback] == ["none", "dspy.GEPA"]
    assert all(len(look.statistic["program_sha256"]) == 64 for look in feedback)
    test = _ledger(frozen, "test")
    assert len(family(test)) == 1 and test[-1].run_id == "gepa-1-test"
    assert {look.statistic["optimizer"] for look in test} == {"dspy.GEPA"}
    assert frozen.read_bytes() == config_before  # no line per submission in the config
    card = next(frozen.parent.glob("splits/*/*/report/split_card.md")).read_text()
    assert "dspy.GEPA" in card and "gepa-1-test" in card


class Always:
    """A program answering one letter to everything (no LM), counting its calls."""

    def __init__(self, letter: str) -> None:
        self.letter, self.calls = letter, 0

    def __call__(self, **inputs: Any) -> Any:
        self.calls += 1
        return dspy.Prediction(answer=self.letter)

    def dump_state(self) -> dict[str, str]:
        return {"letter": self.letter}


def test_train_feedback_holds_the_diagnosis_and_test_is_spent_once(frozen: Path) -> None:
    split = loops.LoopSplit(frozen)
    metric = loops.feedback_metric(frozen)
    examples = loops.examples(frozen, "train")
    by_id = {e.question_id: e for e in examples}
    defect = next(r for r in split.diagnoses.values()
                  if r.tier == "T2" and not r.degraded and r.rationale)
    gold = by_id[defect.question_id]
    wrong = next(letter for letter in "ABCD" if letter != gold.answer)
    scored = metric(gold, dspy.Prediction(answer=wrong))
    assert scored.score == 0.0
    assert defect.rationale in scored.feedback and defect.cause_category in scored.feedback
    assert f"the correct answer is {gold.answer}" in scored.feedback and "T2" in scored.feedback
    assert metric(gold, dspy.Prediction(answer=gold.answer)).score == 1.0
    # every diagnosis it reads is a train question's
    assert set(split.diagnoses) <= {e.question_id for e in examples}

    with pytest.raises(UserError, match="test_look"):
        loops.examples(frozen, "test")
    validation = loops.examples(frozen, "validation")[0]
    with pytest.raises(UserError, match="not a train question"):
        metric(validation, dspy.Prediction(answer="A"))

    first = loops.test_look(Always("A"), "always-a", frozen)  # test_looks_max: 1
    assert first["pools"]["test"]["claim"]["look"] == 1
    db = frozen.parent / "harness.db"
    before = (db.read_bytes(), frozen.read_bytes(), len(_ledger(frozen, "test")))
    other = Always("B")
    with pytest.raises(UserError, match="test_look refused.*nothing was run or written"):
        loops.test_look(other, "always-b", frozen)
    assert other.calls == 0
    assert (db.read_bytes(), frozen.read_bytes(), len(_ledger(frozen, "test"))) == before
    runs = {r[0] for r in sqlite3.connect(db).execute("SELECT DISTINCT run_id FROM predictions")}
    assert "always-a-test" not in runs and "always-a" in runs
