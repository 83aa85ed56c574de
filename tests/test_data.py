"""The data layer: benchmark layouts, the read-only harness db, the signal store."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from split_assets.data.benchmark import load_benchmark
from split_assets.data.harness import canonical_predictions
from split_assets.data.signals import SignalRow, SignalStore
from split_assets.errors import InputError

OFFICIAL = [{"video_id": "001", "duration": "short", "domain": "Knowledge",
             "sub_category": "History", "questions": [
                 {"question_id": "001-1", "task_type": "Counting Problem", "question": "How many?",
                  "options": ["A. 1", "B. 2", "C. 3", "D. 4"], "answer": "B"},
                 {"question_id": "001-2", "task_type": "OCR Problems", "question": "What text?",
                  "choices": ["A. x", "B. y", "C. z", "D. w"], "answer": "D"}]}]
FLAT = {"question_id": "002-1", "video_id": "002", "duration": "long", "task_type": "OCR Problems",
        "question": "Which word?", "options": ["A. a", "B. b", "C. c", "D. d"], "answer": "A",
        "evidence_spans": [[1.0, 2.5]], "domain": "Sports"}


def bench_dir(tmp_path: Path, *records_by_file: tuple[str, object]) -> Path:
    d = tmp_path / "questions"
    d.mkdir(parents=True, exist_ok=True)
    for name, payload in records_by_file:
        if name.endswith(".jsonl"):
            lines = payload if isinstance(payload, list) else [payload]
            (d / name).write_text("\n".join(json.dumps(r) for r in lines) + "\n")
        else:
            (d / name).write_text(json.dumps(payload))
    return d


def test_official_and_flat_layouts_merge(tmp_path: Path) -> None:
    b = load_benchmark(bench_dir(tmp_path, ("a.json", OFFICIAL), ("b.jsonl", FLAT)))
    assert [q.question_id for q in b.questions] == ["001-1", "001-2", "002-1"]
    assert b.by_id["001-2"].options[3] == "D. w"          # 'choices' accepted
    assert b.by_id["001-1"].difficulty == "short"          # video-level duration
    assert b.by_id["001-1"].extra["domain"] == "Knowledge"  # other fields pass through
    assert b.by_id["002-1"].evidence_spans == ((1.0, 2.5),)
    assert b.videos == {"001": ["001-1", "001-2"], "002": ["002-1"]}


def test_digest_ignores_file_names_and_order(tmp_path: Path) -> None:
    one = load_benchmark(bench_dir(tmp_path / "x", ("a.json", OFFICIAL), ("b.jsonl", FLAT)))
    two = load_benchmark(bench_dir(tmp_path / "y", ("0.jsonl", FLAT), ("z.json", OFFICIAL)))
    assert one.digest() == two.digest()


def test_duplicate_question_id_names_both_places(tmp_path: Path) -> None:
    dup = dict(FLAT, question_id="001-1")
    with pytest.raises(InputError) as err:
        load_benchmark(bench_dir(tmp_path, ("a.json", OFFICIAL), ("b.jsonl", dup)))
    assert "duplicate question_id '001-1'" in err.value.line()
    assert "b.jsonl:1" in err.value.line() and "a.json[0].questions[0]" in err.value.line()


@pytest.mark.parametrize("video_id", ["..", "a/b", "x y"])
def test_unsafe_video_id(tmp_path: Path, video_id: str) -> None:
    with pytest.raises(InputError) as err:
        load_benchmark(bench_dir(tmp_path, ("b.jsonl", dict(FLAT, video_id=video_id))))
    assert "unsafe video_id" in err.value.line()


def test_missing_required_field(tmp_path: Path) -> None:
    rec = {k: v for k, v in FLAT.items() if k != "task_type"}
    with pytest.raises(InputError) as err:
        load_benchmark(bench_dir(tmp_path, ("b.jsonl", rec)))
    assert "missing required field(s) task_type" in err.value.line()
    assert "b.jsonl:1" in err.value.line()


def make_db(path: Path, rows: list[tuple]) -> Path:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE predictions (run_id, question_id, prediction, raw_response, "
                 "stop_reason, attempt, created_at, session_id, extra_col)")
    conn.executemany("INSERT INTO predictions VALUES (?,?,?,?,?,?,?,?,'x')", rows)
    conn.commit()
    conn.close()
    return path


@pytest.fixture
def bench(tmp_path: Path):
    return load_benchmark(bench_dir(tmp_path, ("a.json", OFFICIAL), ("b.jsonl", FLAT)))


def test_canonical_row_is_latest_attempt(tmp_path: Path, bench) -> None:
    db = make_db(tmp_path / "h.db", [
        ("r", "001-1", "", "Traceback", "error", 1, "2026-01-01T00:00:00Z", "s"),
        ("r", "001-1", "B", "The best answer is B.", "answer", 2, "2026-01-01T00:01:00Z", "s"),
        ("r", "001-2", "", "", "parse_error", 1, "2026-01-01T00:00:00Z", "s"),
        ("r", "002-1", "C", "C", "answer", 1, "2026-01-01T00:00:00Z", "s"),
        ("other", "002-1", "A", "A", "answer", 1, "2026-01-01T00:00:00Z", "s"),
    ])
    preds = {p.question_id: p for p in canonical_predictions(db, "r", bench, ["error",
                                                                               "parse_error"])}
    assert preds["001-1"].letter == "B" and preds["001-1"].correct and not preds["001-1"].infra
    assert preds["001-2"].infra and not preds["001-2"].correct
    assert preds["002-1"].letter == "C" and not preds["002-1"].correct
    assert not preds["002-1"].infra


def test_tie_with_different_content_is_an_error(tmp_path: Path, bench) -> None:
    db = make_db(tmp_path / "h.db", [
        ("r", "001-1", "B", "B", "answer", 1, "t", "s"),
        ("r", "001-1", "C", "C", "answer", 1, "t", "s"),
        ("r", "001-2", "D", "D", "answer", 1, "t", "s"),
        ("r", "002-1", "A", "A", "answer", 1, "t", "s"),
    ])
    with pytest.raises(InputError, match="same attempt 1"):
        canonical_predictions(db, "r", bench, [])


def test_unknown_run_lists_runs_present(tmp_path: Path, bench) -> None:
    db = make_db(tmp_path / "h.db", [("r1", "001-1", "B", "B", "answer", 1, "t", "s")])
    with pytest.raises(InputError) as err:
        canonical_predictions(db, "nope", bench, [])
    assert "run id 'nope' not in the harness database (runs present: r1)" in err.value.line()


def test_prediction_for_unknown_question(tmp_path: Path, bench) -> None:
    db = make_db(tmp_path / "h.db", [("r", "999-1", "B", "B", "answer", 1, "t", "s")])
    with pytest.raises(InputError, match="not in the benchmark"):
        canonical_predictions(db, "r", bench, [])


def test_missing_predictions_error_or_infra(tmp_path: Path, bench) -> None:
    db = make_db(tmp_path / "h.db", [("r", "001-1", "B", "B", "answer", 1, "t", "s")])
    with pytest.raises(InputError) as err:
        canonical_predictions(db, "r", bench, [])
    assert "2 benchmark question(s) have no prediction" in err.value.line()
    assert "missing_predictions: infra" in err.value.line()
    preds = canonical_predictions(db, "r", bench, [], missing_policy="infra")
    missing = [p for p in preds if p.missing]
    assert [p.question_id for p in missing] == ["001-2", "002-1"]
    assert all(p.infra and not p.correct for p in missing)


def test_harness_db_opened_read_only(tmp_path: Path, bench) -> None:
    db = make_db(tmp_path / "h.db", [("r", q, "B", "B", "answer", 1, "t", "s")
                                     for q in ("001-1", "001-2", "002-1")])
    before = db.read_bytes()
    canonical_predictions(db, "r", bench, [])
    assert db.read_bytes() == before
    assert not (tmp_path / "h.db-wal").exists()


def row(qid: str, tier: str = "T0", **kw) -> SignalRow:
    return SignalRow(question_id=qid, baseline_run_id="r", diag_fingerprint="fp-x",
                     video_id="v", task_type="OCR Problems", tier=tier, **kw)


def test_t0_upserts_are_idempotent(tmp_path: Path) -> None:
    with SignalStore(tmp_path / "s.db") as store:
        store.upsert_many([row("q1", infra=True), row("q2", infra=True)])
        first = store.rows("r", "fp-x")
        store.upsert_many([row("q1", infra=True), row("q2", infra=True)])
        assert store.rows("r", "fp-x") == first
        assert store.count() == 2


def test_upsert_updates_degraded_row_and_keeps_other_fingerprints(tmp_path: Path) -> None:
    with SignalStore(tmp_path / "s.db") as store:
        store.upsert(row("q1", tier="T1", degraded=True))
        store.upsert(SignalRow("q1", "r", "fp-other", "v", "OCR Problems", "T2"))
        assert store.done_question_ids("r", "fp-x") == set()
        store.upsert(row("q1", tier="T2"))
        assert store.done_question_ids("r", "fp-x") == {"q1"}
        assert [r.tier for r in store.rows("r", "fp-other")] == ["T2"]
