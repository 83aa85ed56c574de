"""LongVideoBench and MVBench end to end: a baseline and a reference run from lmms-eval (one
with docs, one without and the benchmark's own release files), a candidate from VLMEvalKit;
``run``, ``verify``, ``compare``. And a workspace built from VLMEvalKit tables scores each row
as VLMEvalKit's score column does."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from conftest import kv
from helpers.harness_samples import (
    question_id,
    replies,
    vlm_rows,
    write_annotations,
    write_lmms,
    write_vlm,
)

from split_assets.demo import shapes
from split_assets.settings import load_config
from split_assets.workspace.inputs import Inputs

DATASET = {"longvideobench": "LongVideoBench", "mvbench": "MVBench"}


def _rows(name: str) -> list[dict]:
    if name == "longvideobench":
        return shapes.longvideobench(seed=5, scale=0.15).rows
    return shapes.mvbench(seed=5, per_task=10).rows


@pytest.mark.parametrize("name", ["longvideobench", "mvbench"])
def test_import_run_verify_compare(tmp_path: Path, run_cli, name: str) -> None:  # noqa: ANN001
    rows, ws = _rows(name), tmp_path / "ws"
    ann = write_annotations(tmp_path / "annotations", name, rows)
    base = write_lmms(tmp_path / "base", name, rows, replies(name, rows, "base"),
                      with_doc=name == "longvideobench")
    code, out, err = run_cli("import", "lmms-eval", "--samples", *map(str, base), "--run-id",
                             "base", "--workspace", str(ws), "--annotations", *map(str, ann))
    assert code == 0, err
    assert f"wrote questions/{name}.json" in out
    ref = write_lmms(tmp_path / "ref", name, rows, replies(name, rows, "ref"),
                     with_doc=name == "mvbench")
    code, out, err = run_cli("import", "lmms-eval", "--samples", *map(str, ref), "--run-id",
                             "ref", "--workspace", str(ws), "--annotations", *map(str, ann))
    assert code == 0 and "added ref to diag.reference_runs" in out, err
    xlsx = write_vlm(tmp_path / f"Qwen2.5-VL-7B_{DATASET[name]}_8frame_score.xlsx", name, rows,
                     replies(name, rows, "cand"))
    code, out, err = run_cli("import", "vlmevalkit", "--results", str(xlsx), "--run-id", "cand",
                             "--workspace", str(ws), "--role", "candidate")
    assert code == 0 and "evaluation.candidates" in out, err
    config = str(ws / "video_split.yaml")
    code, out, err = run_cli("run", "--config", config)
    assert code == 0, err
    pools = kv(out)["pools"]
    code, out, err = run_cli("verify", pools, "--config", config)
    assert code == 0, err
    code, out, err = run_cli("compare", "--candidate", "cand", "--config", config, "--json")
    assert code == 0, err
    assert set(json.loads(out)["pools"]) == {"validation", "test"}
    loaded = load_config(config)
    vs = loaded.config.video_split
    assert vs.letter_rule == name
    assert vs.difficulty_field == ("duration_group" if name == "longvideobench" else None)
    difficulties = {q.difficulty for q in Inputs(loaded).benchmark.questions}
    assert difficulties == ({"15", "60", "600", "3600"} if name == "longvideobench"
                            else {"all"})


@pytest.mark.parametrize("name", ["longvideobench", "mvbench"])
def test_a_vlmevalkit_workspace_scores_as_its_score_column(tmp_path: Path, run_cli,  # noqa: ANN001
                                                           name: str) -> None:
    rows, ws = _rows(name), tmp_path / "ws"
    reps = replies(name, rows, "base")
    reps[0] = "Answer: " + reps[0]  # VLMEvalKit strips "Answer:", lmms-eval's LVB rule not
    reps[1] = "I think the answer is B."  # MVBench: "i" is no option; can_infer reads B
    xlsx = write_vlm(tmp_path / f"m_{DATASET[name]}_8frame_score.xlsx", name, rows, reps)
    code, out, err = run_cli("import", "vlmevalkit", "--results", str(xlsx), "--run-id",
                             "base", "--workspace", str(ws))
    assert code == 0, err
    loaded = load_config(ws / "video_split.yaml")
    assert loaded.config.video_split.letter_rule == f"vlmevalkit-{name}"
    preds = {p.question_id: p for p in Inputs(loaded).predictions}
    scores = [r["score"] for r in vlm_rows(name, rows, reps)]
    for i, score in enumerate(scores):
        assert preds[question_id(name, rows, i)].correct == bool(score), (i, reps[i])
    with sqlite3.connect(ws / "harness.db") as conn:
        assert conn.execute("SELECT count(*) FROM predictions").fetchone()[0] == len(rows)


def test_vlmevalkit_refusals_are_one_line(tmp_path: Path, run_cli) -> None:  # noqa: ANN001
    rows, ws = _rows("longvideobench"), tmp_path / "ws"

    def refused(xlsx: Path) -> str:
        code, out, err = run_cli("import", "vlmevalkit", "--results", str(xlsx), "--run-id",
                                 "r", "--workspace", str(ws))
        assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
        assert not ws.exists()
        return err

    import pandas as pd

    xlsx = write_vlm(tmp_path / "m_LongVideoBench_8frame.xlsx", "longvideobench", rows,
                     replies("longvideobench", rows, "r"), score=False)
    frame = pd.read_excel(xlsx)
    frame.loc[3, "correct_choice"] = 7  # beyond the options
    frame.to_excel(xlsx, index=False)
    err = refused(xlsx)
    assert "row 5" in err and "outside the question's options" in err
    err = refused(write_vlm(tmp_path / "m_MLVU_MCQ_8frame.xlsx", "longvideobench", rows,
                            replies("longvideobench", rows, "r")))
    assert "MLVU tables are not supported" in err and "lmms-eval" in err
