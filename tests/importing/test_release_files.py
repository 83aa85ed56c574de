"""A workspace from the files researchers have: lmms-eval >= 0.4 sample lines (no ``doc``)
plus the benchmark's own release as published, a parquet file (made up here, never the real
annotation, in the release's exact column layout):

* Video-MME, ``videomme/test-00000-of-00001.parquet`` of lmms-lab/Video-MME, the dataset
  lmms-eval's videomme task loads (lmms_eval/tasks/videomme/videomme.yaml, dataset_path
  lmms-lab/Video-MME, test split; the columns as listed in the Hugging Face dataset viewer and
  read by VLMEvalKit's vlmeval/dataset/videomme.py: video_id, duration, domain, sub_category,
  url, videoID, question_id, task_type, question, options, answer);
* LongVideoBench, the validation parquet of longvideobench/LongVideoBench (the features of its
  dataset card, docs/research/issue26_lmms_eval.md section on LongVideoBench: video_id, id,
  video_path, subtitle_path, correct_choice, question, option0..option4, duration,
  duration_group, question_category, topic_category, starting_timestamp_for_subtitles).
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow
import pyarrow.parquet
from conftest import kv
from helpers import framework_files as vm
from helpers import harness_samples as hs

from split_assets.demo import shapes

VIDEOMME_COLUMNS = ["video_id", "duration", "domain", "sub_category", "url", "videoID",
                    "question_id", "task_type", "question", "options", "answer"]
LVB_COLUMNS = ["video_id", "id", "video_path", "subtitle_path", "correct_choice", "question",
               *(f"option{i}" for i in range(5)), "duration", "duration_group",
               "question_category", "topic_category", "starting_timestamp_for_subtitles"]


def _parquet(path: Path, rows: list[dict], columns: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    pyarrow.parquet.write_table(pyarrow.Table.from_pylist(
        [{c: r[c] for c in columns} for r in rows]), path)
    return path


def _results_json(samples: Path, task: str, table: list[dict]) -> float:
    """lmms-eval's <date>_results.json: videomme_aggregate_results is 100 x the share of
    lines whose pred_answer equals the answer."""
    right = sum(vm.lmms_pred_answer(r["response"]) == r["answer"] for r in table)
    score = 100 * right / len(table)
    results = samples.with_name(samples.name.split("_samples_")[0] + "_results.json")
    results.write_text(json.dumps({
        "results": {task: {"alias": task, "videomme_perception_score,none": score,
                           "videomme_perception_score_stderr,none": "N/A"}},
        "n-samples": {task: {"original": len(table), "effective": len(table)}},
        "config": {"model": "qwen2_5_vl", "batch_size": "1"}}), encoding="utf-8")
    return score


def _run_and_compare(run_cli, ws: Path) -> None:  # noqa: ANN001
    """The imported workspace freezes a split, and its candidate compares on both pools."""
    config = str(ws / "video_split.yaml")
    code, out, err = run_cli("run", "--config", config)
    assert code == 0 and kv(out)["pools"], err
    code, out, err = run_cli("compare", "--candidate", "cand", "--config", config, "--json")
    assert code == 0, err
    assert set(json.loads(out)["pools"]) == {"validation", "test"}


def test_videomme_from_lmms_eval_samples_and_the_parquet_release(tmp_path: Path,
                                                                  run_cli) -> None:  # noqa: ANN001
    table = vm.rows(vm_videos := 12, "base")
    release = _parquet(tmp_path / "videomme/test-00000-of-00001.parquet", table,
                       VIDEOMME_COLUMNS)
    samples = vm.write_lmms(tmp_path / "lmms", table, with_doc=False)
    score = _results_json(samples[0], vm.TASK, table)
    ws = tmp_path / "ws"
    code, _, err = run_cli("import", "lmms-eval", "--samples", str(samples[0]), "--run-id",
                           "base", "--workspace", str(ws))
    assert code == 2 and "--annotations" in err and "parquet" in err and not ws.exists()
    code, out, err = run_cli("import", "lmms-eval", "--samples", str(samples[0]),
                             "--annotations", str(release), "--run-id", "base",
                             "--workspace", str(ws))
    assert code == 0, err
    assert f"{3 * vm_videos} answers to {3 * vm_videos} questions" in out
    assert f"lmms-eval's score (20260115_101500_results.json): {score:.2f}" in out
    assert f"imported accuracy: {score:.2f} %" in out and ": the same" in out
    bench = json.loads((ws / "questions/videomme.json").read_text(encoding="utf-8"))
    assert sorted(q["question_id"] for v in bench for q in v["questions"]) == \
        sorted(r["question_id"] for r in table)
    cand = vm.rows(vm_videos, "cand", skill=0.2)
    cand_files = vm.write_lmms(tmp_path / "cand", cand, with_doc=False)
    code, out, err = run_cli("import", "lmms-eval", "--samples", str(cand_files[0]),
                             "--run-id", "cand", "--role", "candidate", "--workspace", str(ws))
    assert code == 0, err
    _run_and_compare(run_cli, ws)


def test_longvideobench_from_its_parquet_release(tmp_path: Path, run_cli) -> None:  # noqa: ANN001
    rows = shapes.longvideobench(seed=5, scale=0.15).rows
    release = _parquet(tmp_path / "lvb/validation-00000-of-00001.parquet",
                       [hs.lvb_doc(r) for r in rows], LVB_COLUMNS)
    base = hs.write_lmms(tmp_path / "base", "longvideobench", rows,
                         hs.replies("longvideobench", rows, "base"), with_doc=False)
    ws = tmp_path / "ws"
    code, out, err = run_cli("import", "lmms-eval", "--samples", *map(str, base),
                             "--annotations", str(release), "--run-id", "base",
                             "--workspace", str(ws))
    assert code == 0, err
    assert "wrote questions/longvideobench.json" in out
    cand = hs.write_lmms(tmp_path / "cand", "longvideobench", rows,
                         hs.replies("longvideobench", rows, "cand"), with_doc=False)
    code, out, err = run_cli("import", "lmms-eval", "--samples", *map(str, cand), "--run-id",
                             "cand", "--role", "candidate", "--workspace", str(ws),
                             "--annotations", str(release))
    assert code == 0, err
    _run_and_compare(run_cli, ws)


def test_a_broken_parquet_file_is_one_line(tmp_path: Path, run_cli) -> None:  # noqa: ANN001
    table = vm.rows(4, "base")
    samples = vm.write_lmms(tmp_path / "lmms", table, with_doc=False)
    broken = tmp_path / "test-00000-of-00001.parquet"
    broken.write_bytes(b"PAR1 not really")
    code, _, err = run_cli("import", "lmms-eval", "--samples", str(samples[0]), "--annotations",
                           str(broken), "--run-id", "base", "--workspace", str(tmp_path / "ws"))
    assert code == 2 and len(err.strip().splitlines()) == 1 and "parquet" in err, err
