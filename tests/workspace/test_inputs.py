"""The data layer: benchmark layouts, the read-only harness db, the signal store."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from split_assets.errors import InputError
from split_assets.judge.prompts import load_templates
from split_assets.sources import harness_db as harness
from split_assets.sources import harness_traces
from split_assets.sources.benchmark import load_benchmark
from split_assets.sources.harness_db import canonical_predictions, run_ids
from split_assets.sources.harness_traces import load_traces
from split_assets.sources.video_store import load_skills, load_tree
from split_assets.store.signals import SignalRow, SignalStore

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


# ---------------------------------------------------------------- benchmark: answers, NaN --


@pytest.mark.parametrize(("options", "answer"), [
    (["A. 1", "B. 2", "C. 3", "D. 4"], "Z"),   # no such option
    (["B. x", "C. y"], "A"),                   # prefixed options: the prefixes are the letters
    (["x", "y"], "C"),                         # plain options: A, B by position
    ([], "A"),                                 # no options at all
])
def test_answer_must_be_one_of_the_option_letters(tmp_path: Path, options: list[str],
                                                  answer: str) -> None:
    records = [FLAT, dict(FLAT, question_id="002-2", options=options, answer=answer)]
    with pytest.raises(InputError) as err:
        load_benchmark(bench_dir(tmp_path, ("b.jsonl", records)))
    assert f"answer {answer!r} is not one of the question's option letters" in err.value.line()
    assert "b.jsonl:2" in err.value.line()


@pytest.mark.parametrize(("options", "answer"), [
    (["B. x", "C) y"], "C"), (["x", "y", "z"], "C"), (["(A) x", "(B) y"], "b")])
def test_answers_valid_for_prefixed_or_plain_options(tmp_path: Path, options: list[str],
                                                     answer: str) -> None:
    b = load_benchmark(bench_dir(tmp_path, ("b.jsonl", dict(FLAT, options=options,
                                                            answer=answer))))
    assert b.by_id["002-1"].answer == answer.upper()


def test_nan_or_infinity_in_a_benchmark_file_names_file_line_and_record(tmp_path: Path) -> None:
    d = bench_dir(tmp_path, ("a.json", OFFICIAL))
    text = json.dumps(OFFICIAL, indent=1).replace('"answer": "D"', '"answer": "D", "score": NaN')
    (d / "a.json").write_text(text)
    line = text[:text.index("NaN")].count("\n") + 1
    with pytest.raises(InputError) as err:
        load_benchmark(d)
    assert "NaN is not a valid JSON value (in a.json[0].questions[1].score)" in err.value.line()
    assert f"a.json:{line}" in err.value.line()
    (d / "a.json").unlink()
    (d / "b.jsonl").write_text(json.dumps(FLAT) + "\n" + json.dumps(FLAT).replace(
        '"002-1"', '"002-2"').replace("[[1.0, 2.5]]", "[[1.0, -Infinity]]") + "\n")
    with pytest.raises(InputError) as err:
        load_benchmark(d)
    assert "-Infinity is not a valid JSON value (in b.jsonl:2.evidence_spans[0][1])" in \
        err.value.line() and "b.jsonl:2" in err.value.line()


@pytest.mark.parametrize(("spans", "message"), [
    ([["nan", 2.0]], "not finite seconds"), ([[1.0, "inf"]], "not finite seconds"),
    ([[0.0, 1.0], [5.0, 2.0]], "evidence_spans[1] starts after it ends (5.0 > 2.0)")])
def test_evidence_spans_finite_and_ordered(tmp_path: Path, spans: list, message: str) -> None:
    with pytest.raises(InputError) as err:
        load_benchmark(bench_dir(tmp_path, ("b.jsonl", dict(FLAT, evidence_spans=spans))))
    assert message in err.value.line() and "b.jsonl:1" in err.value.line()


# ---------------------------------------------------------------- harness db: bad files ----


def test_a_file_that_is_not_sqlite_names_paths_harness_db(tmp_path: Path, bench) -> None:
    db = tmp_path / "h.db"
    db.write_bytes(b"this is not a database, just text " * 100)
    for read in (lambda: canonical_predictions(db, "r", bench, []), lambda: run_ids(db),
                 lambda: load_traces(db, "r", ["001-1"])):
        with pytest.raises(InputError) as err:
            read()
        assert "not a SQLite database" in err.value.line()
        assert f"paths.harness_db {db}" in err.value.line()


def test_a_non_integer_attempt_names_run_and_question(tmp_path: Path, bench) -> None:
    db = make_db(tmp_path / "h.db", [
        ("r", "001-1", "B", "B", "answer", "two", "t", "s"),
        ("r", "001-2", "D", "D", "answer", "2", "t", "s"),  # digits in a text column: fine
        ("r", "002-1", "A", "A", "answer", None, "t", "s"),
    ])
    with pytest.raises(InputError) as err:
        canonical_predictions(db, "r", bench, [])
    assert "attempt 'two' of question '001-1' is not an integer" in err.value.line()
    assert "run 'r'" in err.value.line()


def test_a_locked_harness_db_waits_then_says_how_to_fix(tmp_path: Path, bench,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    db = make_db(tmp_path / "h.db", [("r", q, "B", "B", "answer", 1, "t", "s")
                                     for q in ("001-1", "001-2", "002-1")])
    monkeypatch.setattr(harness, "HARNESS_LOCK_TIMEOUT_S", 0.2)
    agent = sqlite3.connect(db)
    agent.execute("BEGIN EXCLUSIVE")  # the agent is writing
    try:
        with pytest.raises(InputError) as err:
            canonical_predictions(db, "r", bench, [])
    finally:
        agent.rollback()
        agent.close()
    line = err.value.line()
    assert "database is locked" in line and "paths.harness_db" in line
    assert "wait for the agent to finish writing, or copy the database" in line
    assert len(canonical_predictions(db, "r", bench, [])) == 3  # unlocked: reads again


X = ("r", "001-1", "B", "B", "answer", 1, "t", "s1")
Y = ("r", "001-1", "C", "C", "answer", 1, "t", "s2")
Z = ("r", "001-1", "A", "The answer is A", "answer", 2, "t", "s3")
OTHERS = [("r", "001-2", "D", "D", "answer", 1, "t", "s"),
          ("r", "002-1", "A", "A", "answer", 1, "t", "s")]


@pytest.mark.parametrize("order", [(X, Y, Z), (X, Z, Y), (Z, X, Y), (Y, Z, X)])
def test_an_older_tie_is_not_an_error_in_any_row_order(tmp_path: Path, bench,
                                                       order: tuple) -> None:
    db = make_db(tmp_path / "h.db", [*order, *OTHERS])
    preds = {p.question_id: p for p in canonical_predictions(db, "r", bench, [])}
    assert preds["001-1"].letter == "A" and preds["001-1"].session_id == "s3"


OLD = ("r", "001-1", "D", "D", "answer", 0, "t", "s0")


@pytest.mark.parametrize("order", [(X, Y), (Y, X), (X, Y, OLD), (Y, OLD, X), (OLD, X, Y)])
def test_a_tie_at_the_top_is_an_error_in_any_row_order(tmp_path: Path, bench,
                                                       order: tuple) -> None:
    db = make_db(tmp_path / "h.db", [*order, *OTHERS])
    with pytest.raises(InputError, match="2 predictions with the same attempt 1"):
        canonical_predictions(db, "r", bench, [])


def test_identical_tied_rows_pick_the_same_row_in_any_order(tmp_path: Path, bench) -> None:
    a, b = X, X[:-1] + ("s0",)  # same content, other session ids
    for n, rows in enumerate(([a, b], [b, a])):
        db = make_db(tmp_path / f"h{n}.db", [*rows, *OTHERS])
        preds = {p.question_id: p for p in canonical_predictions(db, "r", bench, [])}
        assert preds["001-1"].session_id == "s0"


def test_a_not_sqlite_harness_db_through_the_cli(small_workspace: Path, run_cli) -> None:  # noqa: ANN001
    (small_workspace.parent / "harness.db").write_bytes(b"\x00garbage" * 200)
    code, _, err = run_cli("run", "--dry-run", "--config", str(small_workspace))
    assert code == 2 and err.count("error: ") == 1 and "Traceback" not in err
    assert "not a SQLite database" in err and "paths.harness_db" in err


# ---------------------------------------------------------------- not UTF-8 -----------------


def test_skill_tree_and_prompt_files_that_are_not_utf8(tmp_path: Path) -> None:
    skills = tmp_path / "store" / "skills" / "v1"
    skills.mkdir(parents=True)
    (skills / "count.md").write_bytes(b"---\nname: count\n---\nCount the caf\xe9 chairs.\n")
    with pytest.raises(InputError) as err:
        load_skills(tmp_path / "store", "v1")
    assert "skill file is not UTF-8" in err.value.line() and "count.md" in err.value.line()

    tree = tmp_path / "store" / "videos" / "001" / "tree.json"
    tree.parent.mkdir(parents=True)
    tree.write_bytes(b'{"video_id": "001", "duration_s": 5, "root": {"id": "r", "start_s": 0, '
                     b'"end_s": 5, "caption": "caf\xe9", "children": []}}')
    with pytest.raises(InputError) as err:
        load_tree(tmp_path / "store", "001")
    assert "video tree is not UTF-8" in err.value.line() and str(tree) in err.value.line()

    prompts = tmp_path / "prompts"
    prompts.mkdir()
    (prompts / "defect_vs_lapse.md").write_bytes(b"Decide: defect or lapse? \xff\n")
    with pytest.raises(InputError) as err:
        load_templates(prompts, ("defect_vs_lapse",))
    assert "prompt template 'defect_vs_lapse' is not UTF-8" in err.value.line()
    assert "defect_vs_lapse.md" in err.value.line()


def _traces_db(tmp_path: Path, rows: list[tuple[str, int, str, str]]) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    db = tmp_path / "harness.db"
    with sqlite3.connect(db) as conn:
        harness.create_tables(conn)
        harness.insert_traces(conn, [("r", q, step, kind, content) for q, step, kind, content
                                     in rows])
    return db


OPEN_A = '{"tool": "open_node", "args": {"node_id": "a"}}'


def test_trace_digests_ignore_row_order_and_json_formatting(tmp_path: Path) -> None:
    rows = [("q1", 0, "thought", '{"text": "look"}'), ("q1", 1, "tool_call", OPEN_A),
            ("q2", 0, "answer", '{"text": "B"}')]
    first = harness_traces.trace_digests(_traces_db(tmp_path / "1", rows), "r",
                                  [("q1", "v"), ("q2", "v")], lambda v: {"a"}, "open_node")
    reformatted = [(q, s, k, json.dumps(json.loads(c), indent=2)) for q, s, k, c in rows]
    second = harness_traces.trace_digests(_traces_db(tmp_path / "2", reformatted[::-1]), "r",
                                   [("q2", "v"), ("q1", "v")], lambda v: {"a"}, "open_node")
    assert first == second and first["q1"] != first["q2"]
    edited = [*rows[:2], ("q2", 0, "answer", '{"text": "C"}')]
    third = harness_traces.trace_digests(_traces_db(tmp_path / "3", edited), "r",
                                  [("q1", "v"), ("q2", "v")], lambda v: {"a"}, "open_node")
    assert third["q1"] == first["q1"] and third["q2"] != first["q2"]


def test_a_trace_opening_a_node_its_tree_lacks_is_refused_where_read(tmp_path: Path) -> None:
    db = _traces_db(tmp_path, [("q1", 0, "tool_call", OPEN_A)])
    with pytest.raises(InputError, match="trace of 'q1' opens node 'a', which is not in the "
                                         "tree of video 'v'"):
        harness_traces.trace_digests(db, "r", [("q1", "v")], lambda v: {"b"}, "open_node")
    # another tool's calls open nothing; a question without a trace counts as an empty one
    assert harness_traces.trace_digests(db, "r", [("q1", "v"), ("q9", "v")], lambda v: set(),
                                 "open_clip")["q9"] == harness_traces.trace_digest([])


def test_question_ids_stored_as_integers_meet_their_text_rows(tmp_path: Path) -> None:
    # a harness that wrote some ids as INTEGER and a retry as TEXT: one question, whatever the
    # type (the rows are read one question at a time, sorted by the id as text)
    records = [{"question_id": qid, "video_id": "v", "duration": "short", "task_type": "OCR",
                "question": "?", "options": ["A. a", "B. b"], "answer": "A"}
               for qid in ("7", "10", "100")]
    bench = load_benchmark(bench_dir(tmp_path, ("q.jsonl", records)))
    db = make_db(tmp_path / "h.db", [
        ("r", 7, "B", "B", "answer", 1, "t", "s1"), ("r", 100, "A", "A", "answer", 1, "t", "s"),
        ("r", "10", "B", "B", "answer", 1, "t", "s"), ("r", "7", "A", "A", "answer", 2, "t", "s2"),
    ])
    preds = {p.question_id: p for p in canonical_predictions(db, "r", bench, [])}
    assert (preds["7"].letter, preds["7"].session_id) == ("A", "s2")
    assert preds["10"].letter == "B" and preds["100"].correct
