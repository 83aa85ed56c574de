"""Made-up results in the exact output formats of lmms-eval and VLMEvalKit (never the real
annotation): the questions of ``official_layout`` (12 videos -> 36 questions by default), each
given a YouTube-style ``videoID``.

lmms-eval -- field names and nesting from EvolvingLMMs-Lab/lmms-eval at commit
75571cfe0fa36ca5ec2e6aa2bb268f9d38295af3:
  * lmms_eval/tasks/videomme/utils.py, videomme_process_results: the metric dict
    ``videomme_perception_score`` = {question_id, duration, category (doc["domain"]),
    sub_category, task_category (doc["task_type"]), pred_answer, answer, score, videoID};
    ``pred_answer`` from extract_characters_regex (the pre-9ca4445 rule is reproduced below).
  * lmms_eval/evaluator.py (per-sample record, ~line 1277): doc_id, doc, target, arguments,
    resps, filtered_resps, token_counts, doc_hash, then the metric keys.
  * lmms_eval/loggers/evaluation_tracker.py, save_results_samples: ``input`` = arguments[0],
    ``target`` as str; v0.4+ pops ``doc`` and ``arguments``; v0.4-v0.6 keep ``resps``
    ([[str]]) and ``filtered_resps`` ([str]), dropping ``resps`` when it equals
    ``filtered_resps``; the file is ``<model>/<date>_samples_<task>.jsonl``.
  * the doc is the lmms-lab/Video-MME row: video_id, duration, domain, sub_category, url,
    videoID, question_id, task_type, question, options (["A. ...", ...]), answer (a letter).

VLMEvalKit -- open-compass/VLMEvalKit at commit e8e78f05f3080fe28154f2130321f17951c3be94:
  * vlmeval/dataset/videomme.py, generate_tsv: columns index (0-based row), video (=videoID),
    video_path, duration, domain, candidates (options .tolist(), written as a Python list
    string), sub_category, task_type, subtitle_path, question, answer; the prediction table
    (<model>_Video-MME_8frame.xlsx) adds ``prediction``; its _score table adds ``score``.
  * FAIL_MSG = 'Failed to obtain answer via API.' (videomme.py, vlmeval/api/base.py).
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from helpers.official_layout import _questions, answers

TASK = "videomme"


def video_youtube_id(video_id: str) -> str:
    return "yt" + hashlib.sha256(video_id.encode()).hexdigest()[:9]


def rows(n_videos: int, run: str, seed: int = 1, skill: float = 0.0) -> list[dict[str, Any]]:
    """One Video-MME row per question, with this run's response."""
    given = answers(n_videos, run, seed, skill)
    out = []
    for video in _questions(n_videos, seed):
        for q in video["questions"]:
            out.append({"video_id": video["video_id"], "duration": video["duration"],
                        "domain": video["domain"], "sub_category": video["sub_category"],
                        "url": f"https://www.youtube.com/watch?v={video_youtube_id(video['video_id'])}",
                        "videoID": video_youtube_id(video["video_id"]),
                        "question_id": q["question_id"], "task_type": q["task_type"],
                        "question": q["question"], "options": q["options"],
                        "answer": q["answer"], "response": given[q["question_id"]]})
    return out


def lmms_pred_answer(s: str) -> str:
    """lmms-eval's extract_characters_regex before 9ca4445 (its pred_answer)."""
    s = s.strip()
    for prefix in ["The best answer is", "The correct answer is", "The answer is",
                   "The answer", "The best option is", "The correct option is",
                   "Best answer:", "Best option:"]:
        s = s.replace(prefix, "")
    if len(s.split()) > 10 and not re.search("[ABCD]", s):
        return ""
    matches = re.search(r"[ABCD]", s)
    return "" if matches is None else matches[0]


def lmms_record(doc_id: int, row: dict[str, Any], with_doc: bool,
                metric: str = "videomme_perception_score") -> dict[str, Any]:
    doc = {k: v for k, v in row.items() if k != "response"}
    pred = lmms_pred_answer(row["response"])
    record: dict[str, Any] = {
        "doc_id": doc_id, "target": str(row["answer"]),
        "filtered_resps": [row["response"]],
        "token_counts": [len(row["response"]) // 4],
        "doc_hash": hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest(),
        "input": f"Select the best answer...\n{row['question']}\n" + "\n".join(row["options"]),
        metric: {"question_id": row["question_id"], "duration": row["duration"],
                 "category": row["domain"], "sub_category": row["sub_category"],
                 "task_category": row["task_type"], "pred_answer": pred,
                 "answer": row["answer"], "score": float(pred.lower() == row["answer"].lower()),
                 "videoID": row["videoID"]},
    }
    if with_doc:  # lmms-eval <= v0.3 kept the doc
        record["doc"] = doc
    if "<think>" in row["response"]:  # raw and filtered differ: both are written
        record["resps"] = [[row["response"]]]
        record["filtered_resps"] = [re.sub(r"<think>.*?</think>", "", row["response"],
                                           flags=re.S).strip()]
    return record


def write_lmms(folder: Path, table: list[dict[str, Any]], with_doc: bool = True,
               task: str = TASK, date: str = "20260115_101500", parts: int = 1) -> list[Path]:
    """``<folder>/<model>/<date>_samples_<task>.jsonl`` (``parts`` > 1: one file per slice,
    as runs with --limit / offsets make, each with its own date)."""
    model = folder / "Qwen__Qwen2.5-VL-7B-Instruct"
    model.mkdir(parents=True, exist_ok=True)
    size = -(-len(table) // parts)
    paths = []
    for part in range(parts):
        path = model / f"{date[:-2]}{part:02d}_samples_{task}.jsonl"
        lines = [json.dumps(lmms_record(i, row, with_doc), ensure_ascii=False)
                 for i, row in enumerate(table) if i // size == part]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        paths.append(path)
    return paths


VLM_COLUMNS = ["index", "video", "video_path", "duration", "domain", "candidates",
               "sub_category", "task_type", "subtitle_path", "question", "answer", "prediction"]


def write_vlmevalkit(path: Path, table: list[dict[str, Any]]) -> Path:
    """VLMEvalKit's prediction table (.xlsx, .tsv or .csv by the suffix), via pandas as
    VLMEvalKit writes it."""
    import pandas as pd

    records = [{"index": i, "video": r["videoID"], "video_path": f"./video/{r['videoID']}.mp4",
                "duration": r["duration"], "domain": r["domain"],
                "candidates": str(list(r["options"])), "sub_category": r["sub_category"],
                "task_type": r["task_type"], "subtitle_path": f"./subtitle/{r['videoID']}.srt",
                "question": r["question"], "answer": r["answer"], "prediction": r["response"]}
               for i, r in enumerate(table)]
    frame = pd.DataFrame(records, columns=VLM_COLUMNS)
    if path.suffix == ".xlsx":
        frame.to_excel(path, index=False)
    else:
        frame.to_csv(path, sep="\t" if path.suffix == ".tsv" else ",", index=False)
    return path
