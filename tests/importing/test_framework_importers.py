"""`split-assets import lmms-eval | vlmevalkit`: results in the two harnesses' exact formats
(tests/helpers/framework_files.py cites the source of every field), imported, split and
compared; every malformed input refused in one line with nothing written."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from helpers.framework_files import rows, write_lmms, write_vlmevalkit
from helpers.official_layout import LETTERS

N_VIDEOS = 12  # 36 questions
REASONING = ("<think>The clip shows A man at a desk.</think> A man opens the box at 0:41, "
             "so the answer is (C).")


def _answers(ws: Path, run: str) -> dict[str, tuple]:
    with sqlite3.connect(ws / "harness.db") as conn:
        return {q: (r, s) for q, r, s in conn.execute(
            "SELECT question_id, raw_response, stop_reason FROM predictions WHERE run_id = ?",
            (run,))}


def _state(ws: Path) -> dict[str, bytes]:
    return {str(p.relative_to(ws)): p.read_bytes() for p in sorted(ws.rglob("*"))
            if p.is_file()} if ws.exists() else {}


def _baseline(tmp_path: Path) -> tuple[list[dict], list[Path]]:
    table = rows(N_VIDEOS, "base")
    table[0]["response"] = REASONING  # reasoning before the letter
    table[1]["response"] = ""  # an empty response
    table[2]["response"] = "E"  # not an option
    files = write_lmms(tmp_path / "lmms", table, parts=2)  # two files of one run
    # lmms-eval's newer extractor reads "the answer is (C)"; ours (Video-MME's) reads the A
    first = files[0].read_text().splitlines()
    record = json.loads(first[0])
    record["videomme_perception_score"]["pred_answer"] = "C"
    files[0].write_text("\n".join([json.dumps(record), *first[1:]]) + "\n")
    return table, files


def test_lmms_eval_and_vlmevalkit_results_split_and_compare(tmp_path: Path, run_cli) -> None:  # noqa: ANN001
    table, files = _baseline(tmp_path)
    other_variant = write_lmms(tmp_path / "lmms", rows(N_VIDEOS, "base"),
                               task="videomme_w_subtitle")
    ws = tmp_path / "ws"
    code, _, err = run_cli("import", "lmms-eval", "--samples", *map(str, files + other_variant),
                           "--run-id", "base", "--workspace", str(ws))
    assert code == 2 and "2 task variants (videomme, videomme_w_subtitle)" in err
    assert "--task" in err and not ws.exists()
    code, out, err = run_cli("import", "lmms-eval", "--samples", *map(str, files + other_variant),
                             "--task", "videomme", "--run-id", "base", "--workspace", str(ws))
    assert code == 0, err
    assert "36 answers to 36 questions" in out and "skipped" in out
    assert "pred_answer differs from our letter on 1 answer(s)" in out
    got = _answers(ws, "base")
    assert got[table[0]["question_id"]][0] == REASONING.split("</think> ")[1]  # filtered_resps
    assert got[table[1]["question_id"]][0] == "" and got[table[2]["question_id"]][0] == "E"
    bench = json.loads((ws / "questions" / "videomme.json").read_text())
    assert {q["videoID"] for v in bench for q in v["questions"]} == {r["videoID"] for r in table}
    # a second run without docs (lmms-eval >= 0.4): into the workspace, a reference run
    ref = write_lmms(tmp_path / "ref", rows(N_VIDEOS, "ref"), with_doc=False)
    code, out, err = run_cli("import", "lmms-eval", "--samples", str(ref[0]), "--run-id", "ref",
                             "--workspace", str(ws))
    assert code == 0, err
    assert "added ref to diag.reference_runs" in out
    # VLMEvalKit: a candidate, joined by videoID and question text; one API failure
    cand = rows(N_VIDEOS, "cand", skill=0.15)
    cand[5]["response"] = "Failed to obtain answer via API."
    cand[6]["response"] = "Failed to obtain answer via API."  # the A of "API" is not an answer
    cand[6]["answer"] = table[6]["answer"]
    xlsx = write_vlmevalkit(tmp_path / "Qwen2.5-VL-7B_Video-MME_8frame.xlsx", cand)
    code, out, err = run_cli("import", "vlmevalkit", "--results", str(xlsx), "--run-id", "cand",
                             "--workspace", str(ws), "--role", "candidate")
    assert code == 0, err
    assert "2 answer(s) are VLMEvalKit's" in out and "evaluation.candidates" in out
    assert _answers(ws, "cand")[cand[5]["question_id"]] == ("", "error")  # INFRA, no letter
    config = str(ws / "video_split.yaml")
    code, out, err = run_cli("run", "--config", config)
    assert code == 0, err
    code, out, err = run_cli("compare", "--candidate", "cand", "--config", config, "--json")
    assert code == 0, err
    assert set(json.loads(out)["pools"]) == {"validation", "test"}


def _refused(run_cli, ws: Path, *argv: str) -> str:  # noqa: ANN001
    before = _state(ws)
    code, _, err = run_cli(*argv)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert _state(ws) == before  # nothing written
    return err


def test_malformed_lmms_eval_files_are_refused_in_one_line(tmp_path: Path, run_cli) -> None:  # noqa: ANN001
    table = rows(N_VIDEOS, "base")
    ws = tmp_path / "ws"
    (path,) = write_lmms(tmp_path / "a", table)
    lines = path.read_text().splitlines()

    def variant(name: str, new_lines: list[str]) -> str:
        bad = path.with_name(f"20260115_101500_samples_{name}.jsonl")
        bad.write_text("\n".join(new_lines) + "\n")
        return str(bad)

    assert run_cli("import", "lmms-eval", "--samples", str(path), "--run-id", "base",
                   "--workspace", str(ws))[0] == 0
    args = ("--run-id", "ref", "--workspace", str(ws))
    err = _refused(run_cli, ws, "import", "lmms-eval", "--samples",
                   variant("videomme", lines[:3] + ["{not json"] + lines[3:]), *args)
    assert "invalid JSON line" in err and "_samples_videomme.jsonl:4" in err
    other = json.loads(lines[5])
    other["acc_score"] = other.pop("videomme_perception_score")  # a line of another variant
    err = _refused(run_cli, ws, "import", "lmms-eval", "--samples",
                   variant("videomme", lines[:5] + [json.dumps(other)] + lines[6:]), *args)
    assert "no videomme_perception_score (a line of another task variant?)" in err
    assert ":6" in err
    err = _refused(run_cli, ws, "import", "lmms-eval", "--samples",
                   variant("videomme", lines + [lines[7]]), *args)
    assert f"question {table[7]['question_id']!r} appears twice" in err and ":8)" in err
    err = _refused(run_cli, ws, "import", "lmms-eval", "--samples",
                   variant("videomme", lines[:30]), *args)  # a file missing questions
    assert "6 of 36 benchmark questions have no answer" in err and "--partial" in err
    code, out, err = run_cli("import", "lmms-eval", "--samples",
                             variant("videomme", lines[:30]), "--partial", *args)
    assert code == 0 and "30 answers to 36 questions" in out, err
    bare = write_lmms(tmp_path / "b", table, with_doc=False)
    err = _refused(run_cli, tmp_path / "new", "import", "lmms-eval", "--samples", str(bare[0]),
                   "--run-id", "x", "--workspace", str(tmp_path / "new"))
    assert "no benchmark in" in err and "--annotations" in err and "parquet" in err


@pytest.mark.parametrize(("suffix"), [".tsv", ".csv"])
def test_malformed_vlmevalkit_tables_are_refused_in_one_line(tmp_path: Path, run_cli,  # noqa: ANN001
                                                             suffix: str) -> None:
    ws = tmp_path / "ws"
    assert run_cli("import", "lmms-eval", "--samples",
                   str(write_lmms(tmp_path / "a", rows(N_VIDEOS, "base"))[0]), "--run-id", "base",
                   "--workspace", str(ws))[0] == 0
    args = ("--run-id", "cand", "--workspace", str(ws))

    def table_with(change) -> str:  # noqa: ANN001
        cand = rows(N_VIDEOS, "cand")
        change(cand)
        return str(write_vlmevalkit(tmp_path / f"t{len(list(tmp_path.iterdir()))}{suffix}",
                                    cand))

    def unknown(c: list) -> None:
        c[4]["question"] = "A question no benchmark asks?"

    err = _refused(run_cli, ws, "import", "vlmevalkit", "--results", table_with(unknown), *args)
    assert "no question of the workspace's benchmark matches" in err and " row 6" in err

    def wrong_answer(c: list) -> None:
        c[2]["answer"] = next(x for x in LETTERS if x != c[2]["answer"])

    err = _refused(run_cli, ws, "import", "vlmevalkit", "--results", table_with(wrong_answer),
                   *args)
    assert "differs from the benchmark's" in err and " row 4" in err

    def twice(c: list) -> None:
        c.append(dict(c[0]))

    err = _refused(run_cli, ws, "import", "vlmevalkit", "--results", table_with(twice), *args)
    assert "appears twice (first in row 2)" in err
    bad = Path(table_with(lambda c: None))
    text = bad.read_text().replace("prediction", "pred", 1)
    bad.write_text(text)
    err = _refused(run_cli, ws, "import", "vlmevalkit", "--results", str(bad), *args)
    assert "missing column(s) prediction" in err and " row 1" in err


def test_a_row_several_questions_match_is_refused(tmp_path: Path, run_cli) -> None:  # noqa: ANN001
    """Without videoID in the benchmark (an official-layout import), a row joins on its
    question text and options: two questions alike cannot be told apart."""
    from helpers.official_layout import results

    videos = results(N_VIDEOS, "base")
    twin = videos[3]["questions"][0]
    twin["question"] = videos[0]["questions"][0]["question"]
    twin["options"], twin["answer"] = (videos[0]["questions"][0]["options"],
                                       videos[0]["questions"][0]["answer"])
    (tmp_path / "base.json").write_text(json.dumps(videos))
    ws = tmp_path / "ws"
    assert run_cli("import", "videomme", "--results", str(tmp_path / "base.json"), "--run-id",
                   "base", "--workspace", str(ws))[0] == 0
    cand = rows(N_VIDEOS, "cand")
    cand[9]["question"], cand[9]["options"], cand[9]["answer"] = (
        cand[0]["question"], cand[0]["options"], cand[0]["answer"])
    table = write_vlmevalkit(tmp_path / "t.tsv", cand)
    err = _refused(run_cli, ws, "import", "vlmevalkit", "--results", str(table), "--run-id",
                   "cand", "--workspace", str(ws))
    assert "2 questions of the benchmark match" in err and "001-1, 004-1" in err


def test_a_renamed_task_imports_by_following_the_hint(tmp_path: Path, run_cli) -> None:  # noqa: ANN001
    """A task renamed in the user's lmms-eval (custom_video_qa: Video-MME's questions, its own
    metric name): the error's hint is one that works, and the harness's score is found under
    the renamed metric in the results.json beside the samples."""
    table = rows(N_VIDEOS, "base")
    files = write_lmms(tmp_path / "lmms", table, task="custom_video_qa")
    lines = [json.loads(line) for line in files[0].read_text().splitlines()]
    for line in lines:
        line["custom_video_qa_score"] = line.pop("videomme_perception_score")
    files[0].write_text("".join(json.dumps(line) + "\n" for line in lines))
    right = sum(line["custom_video_qa_score"]["score"] for line in lines)
    results = files[0].with_name(files[0].name.split("_samples_")[0] + "_results.json")
    results.write_text(json.dumps({
        "results": {"custom_video_qa": {"alias": "custom_video_qa",
                                        "custom_video_qa_score,none": 100 * right / len(lines)}},
        "config": {"model": "qwen2_5_vl", "model_args": "pretrained=Qwen/Qwen2.5-VL-7B,"
                                                        "api_key=sk-abcdefghijklmnop"},
        "date": 1768471500.0, "lmms_eval_version": "0.4.1"}))
    ws = tmp_path / "ws"
    code, _, err = run_cli("import", "lmms-eval", "--samples", str(files[0]), "--run-id",
                           "base", "--workspace", str(ws))
    assert code == 2 and "under 'custom_video_qa_score'" in err and not ws.exists()
    hint = err.split(": pass ", 1)[1].split(" to import")[0]
    assert hint == "--benchmark videomme"
    code, out, err = run_cli("import", "lmms-eval", "--samples", str(files[0]), "--run-id",
                             "base", "--workspace", str(ws), *hint.split())
    assert code == 0, err
    assert "36 answers to 36 questions" in out and ": the same" in out  # its score, found
    from split_assets.importing.provenance import read_provenance

    kept = read_provenance(ws / "harness.db")["base"]
    assert (kept["harness"], kept["harness_version"], kept["model"], kept["task"]) == (
        "lmms-eval", "0.4.1", "qwen2_5_vl", "custom_video_qa")
    assert "sk-abc" not in json.dumps(kept) and kept["date"] == "2026-01-15T10:05:00Z"
