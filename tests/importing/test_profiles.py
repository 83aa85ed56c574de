"""Benchmark profiles: lines in each harness's exact format (tests/helpers/harness_samples.py
cites the task code of every field and transcribes each harness's scoring) import with the
harness's own per-line verdict -- also on the replies where a naive first-letter reading
disagrees with it -- and every refusal is one line that writes nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.harness_samples import (
    TRICKY,
    answer_letter,
    by_chance,
    naive_letter,
    question_id,
    questions,
    replies,
    verdict_of,
    write_annotations,
    write_lmms,
)

from split_assets.settings import load_config
from split_assets.workspace.inputs import Inputs

NAMES = ("longvideobench", "mlvu", "mvbench", "nextqa", "egoschema", "tempcompass",
         "perceptiontest")
WITH_DOC = {"longvideobench", "nextqa", "tempcompass"}  # the others: lmms-eval 0.7 lines


def _state(ws: Path) -> dict[str, bytes]:
    return {str(p.relative_to(ws)): p.read_bytes() for p in sorted(ws.rglob("*"))
            if p.is_file()} if ws.exists() else {}


def _import(run_cli, name: str, tmp_path: Path, run: str, *extra: str):  # noqa: ANN001, ANN202
    rows = questions(name)
    reps = replies(name, rows, run)
    files = write_lmms(tmp_path / run, name, rows, reps, name in WITH_DOC)
    ann = [] if name in WITH_DOC else write_annotations(tmp_path / "annotations", name, rows)
    argv = ["import", "lmms-eval", "--samples", *map(str, files), "--run-id", run,
            "--workspace", str(tmp_path / "ws"), *extra]
    argv += ["--annotations", *map(str, ann)] if ann else []
    return rows, reps, files, run_cli(*argv)


@pytest.mark.parametrize("name", NAMES)
def test_lines_import_with_the_harness_verdict(tmp_path: Path, run_cli, name: str) -> None:  # noqa: ANN001
    rows, reps, files, (code, out, err) = _import(run_cli, name, tmp_path, "base")
    assert code == 0, err
    lines = [json.loads(x) for f in sorted(files) for x in f.read_text().splitlines()]
    if name == "mvbench":  # files per subtask: back to the rows' order
        order = {question_id(name, rows, i): i for i in range(len(rows))}
        lines.sort(key=lambda ln: order[_mv_id(ln, files, rows)])
    loaded = load_config(tmp_path / "ws" / "video_split.yaml")
    assert loaded.config.video_split.letter_rule != "videomme"
    preds = {p.question_id: p for p in Inputs(loaded).predictions}
    assert len(preds) == len(rows)
    tricky = checked = 0
    for i, (row, reply, line) in enumerate(zip(rows, reps, lines, strict=True)):
        pred = preds[question_id(name, rows, i)]
        assert pred.answer == answer_letter(name, row)
        if by_chance(name, reply, row):  # the harness drew a letter: no answer here
            assert pred.letter == "" and pred.infra
            continue
        assert pred.correct == verdict_of(name, line), (name, reply, line)
        checked += 1
        naive = naive_letter(reply) == answer_letter(name, row)
        tricky += naive != verdict_of(name, line)
    assert checked >= len(rows) // 2 and tricky >= 1, (name, checked, tricky)
    assert TRICKY[name]
    assert "harness" not in err


def _mv_id(line: dict, files: list[Path], rows: list[dict]) -> str:
    for f in files:
        if json.dumps(line, ensure_ascii=False) in f.read_text():
            return f"{f.stem.split('_samples_mvbench_')[1]}-{line['doc_id']:05d}"
    raise AssertionError(line)


def _refused(run_cli, ws: Path, *argv: str) -> str:  # noqa: ANN001
    before = _state(ws)
    code, out, err = run_cli(*argv)
    assert code == 2 and out == "", (code, out, err)
    assert len(err.strip().splitlines()) == 1, err
    assert _state(ws) == before
    return err.strip()


def test_refusals_name_the_file_the_line_and_the_fix(tmp_path: Path, run_cli) -> None:  # noqa: ANN001
    ws = tmp_path / "ws"
    rows = questions("egoschema")
    files = write_lmms(tmp_path / "e", "egoschema", rows, replies("egoschema", rows, "r"), True)
    withheld = files[0].read_text().replace('"ground_truth": "', '"ground_truth": null, "x": "')
    full = files[0].with_name(files[0].name.replace("egoschema_subset", "egoschema"))
    full.write_text(withheld)
    err = _refused(run_cli, ws, "import", "lmms-eval", "--samples", str(full), "--run-id", "r",
                   "--workspace", str(ws))
    assert f"{full}:1" in err and "withheld" in err and "egoschema_subset" in err

    lvb = questions("longvideobench")
    files = write_lmms(tmp_path / "l", "longvideobench", lvb, replies("longvideobench", lvb,
                                                                      "r"), False)
    err = _refused(run_cli, ws, "import", "lmms-eval", "--samples", str(files[0]), "--run-id",
                   "r", "--workspace", str(ws))
    assert f"{files[0]}:1" in err and "no doc" in err and "--annotations" in err

    unknown = files[0].with_name("20260801_101500_samples_mystery_bench.jsonl")
    unknown.write_text('{"doc_id": 0, "target": "1", "filtered_resps": "B", "mystery": {}}\n')
    err = _refused(run_cli, ws, "import", "lmms-eval", "--samples", str(unknown), "--run-id",
                   "r", "--workspace", str(ws))
    assert "unknown task mystery_bench" in err and "--benchmark" in err and "--map" in err

    ann = write_annotations(tmp_path / "a", "longvideobench", lvb)
    other = files[0].with_name("20260801_101500_samples_longvideobench_val_i.jsonl")
    other.write_text(json.dumps({"doc_id": 0, "target": "1", "filtered_resps": "B",
                                 "mvbench_accuracy": {"score": 1}}) + "\n")
    err = _refused(run_cli, ws, "import", "lmms-eval", "--samples", str(other), "--run-id",
                   "r", "--workspace", str(ws), "--annotations", *map(str, ann))
    assert f"{other}:1" in err and "no lvb_acc" in err and "another benchmark" in err

    mv = questions("mvbench")
    mv_files = write_lmms(tmp_path / "m", "mvbench", mv, replies("mvbench", mv, "r"), False)
    mv_ann = write_annotations(tmp_path / "ma", "mvbench", mv)
    err = _refused(run_cli, ws, "import", "lmms-eval", "--samples", *map(str, mv_files),
                   "--run-id", "r", "--workspace", str(ws), "--annotations", str(mv_ann[0]))
    assert "no annotations file for subtask" in err and ".json among --annotations" in err

    bad = [dict(r) for r in lvb]
    bad[0]["correct_choice"] = len(bad[0]["candidates"])  # beyond its options
    ann = write_annotations(tmp_path / "b", "longvideobench", bad)
    err = _refused(run_cli, ws, "import", "lmms-eval", "--samples", str(files[0]), "--run-id",
                   "r", "--workspace", str(ws), "--annotations", *map(str, ann))
    assert f"{files[0]}:" in err and "outside the question's options" in err


def test_a_partial_run_imports_against_the_whole_benchmark(tmp_path: Path, run_cli) -> None:  # noqa: ANN001
    """lmms-eval --limit: the annotations make the benchmark, the lines answer part of it."""
    rows = questions("perceptiontest")
    files = write_lmms(tmp_path / "p", "perceptiontest", rows[:8],
                       replies("perceptiontest", rows[:8], "r"), False)
    ann = write_annotations(tmp_path / "a", "perceptiontest", rows)
    argv = ["import", "lmms-eval", "--samples", str(files[0]), "--run-id", "r", "--workspace",
            str(tmp_path / "ws"), "--annotations", str(ann[0])]
    err = _refused(run_cli, tmp_path / "ws", *argv)
    assert "4 of 12 benchmark questions have no answer" in err and "--partial" in err
    code, out, err = run_cli(*argv, "--partial")
    assert code == 0 and "8 answers to 12 questions" in out, err


@pytest.mark.parametrize("name", ("mlvu", "mvbench", "perceptiontest"))
def test_a_run_of_an_exported_pool_task_maps_its_doc_ids_back(tmp_path: Path,
                                                              run_cli, name: str) -> None:  # noqa: ANN001
    """lmms-eval numbers the docs a pool task kept from 0 (``split-assets export lmms-eval``):
    with --pool-task each line lands on its own question; without it the same file is
    refused (a line's stated answer is not its record's) or, at worst, misread."""
    rows, _, _, (code, _, err) = _import(run_cli, name, tmp_path, "base")
    assert code == 0, err
    ann = sorted((tmp_path / "annotations").glob("*.json*"))
    keep = [i for i in range(len(rows)) if i % 3 != 1]  # a pool: two rows of three
    ids = [question_id(name, rows, i) for i in keep]
    folder = tmp_path / "pool_task"
    folder.mkdir()
    (folder / "pool.json").write_text(json.dumps({"benchmark": name, "question_ids": ids}))
    subset = [rows[i] for i in keep]
    reps = replies(name, subset, "cand")
    files = write_lmms(tmp_path / "cand", name, subset, reps, False)  # doc_id 0, 1, ...
    argv = ["import", "lmms-eval", "--samples", *map(str, files), "--run-id", "cand",
            "--workspace", str(tmp_path / "ws"), "--annotations", *map(str, ann), "--partial"]
    code, out, err = run_cli(*argv, "--pool-task", str(folder))
    assert code == 0, err
    loaded = load_config(tmp_path / "ws" / "video_split.yaml")

    def answered() -> list[str]:
        correct = Inputs(loaded).outcomes("cand", "candidate", "--run-id").correct
        return sorted(q for q, ok in correct.items() if ok is not None)

    assert answered() == sorted(ids)
    code, _, err = run_cli(*argv, "--replace")  # the same file, read as the whole benchmark
    if code == 0:  # every stated answer happened to fit: then it misread which questions
        assert answered() != sorted(ids)
    else:
        assert code == 2 and "its record" in err, err
