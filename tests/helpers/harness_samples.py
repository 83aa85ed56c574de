"""Made-up questions of seven benchmarks in the exact formats lmms-eval and VLMEvalKit write
(never a benchmark's data), with each line's metric computed by the harness's own scoring,
transcribed here as the harness has it (an oracle independent of split_assets/sources/letters.py).

lmms-eval, EvolvingLMMs-Lab/lmms-eval @ 75571cfe0fa36ca5ec2e6aa2bb268f9d38295af3:
  * the line: lmms_eval/evaluator.py (~L1277: doc_id, doc, target, arguments, resps,
    filtered_resps, doc_hash, then every key process_results returns) and
    lmms_eval/loggers/evaluation_tracker.py save_results_samples (v0.4+ pops doc and
    arguments, adds input; v0.7 flattens filtered_resps to a string, adds token_counts);
  * lmms_eval/tasks/longvideobench/utils.py longvideobench_process_results,
    parse_multi_choice_response (lvb_acc, submission);
  * lmms_eval/tasks/mlvu/utils.py mlvu_process_results (mlvu_percetion_score; the letter by
    lmms_eval/tasks/_task_utils/mcq_extract.py extract_mcq_answer);
  * lmms_eval/tasks/mvbench/utils.py mvbench_process_results, mcq_acc (mvbench_accuracy);
  * lmms_eval/tasks/nextqa/utils.py nextqa_mc_process_results (exact_match);
  * lmms_eval/tasks/egoschema/utils.py egoschema_process_results_generation (submission,
    score);
  * lmms_eval/tasks/tempcompass/utils.py tempcompass_process_results_multi_choice
    (avg_accuracy, <dim>_accuracy; with no OpenAI key its GPT fallback scores 0);
  * lmms_eval/tasks/perceptiontest/val/utils.py perceptiontest_val_process_results_mc.
VLMEvalKit, open-compass/VLMEvalKit @ e8e78f05f3080fe28154f2130321f17951c3be94:
  * vlmeval/dataset/longvideobench.py (TSV = lvb_val.json + index, video; candidates as a
    Python list string; score by utils/longvideobench.py extract_characters_regex);
  * vlmeval/dataset/mvbench.py (task_type, prefix, data_type, bound, start, end, video,
    question, answer, candidates, index; score by utils/mvbench.py check_ans_with_model, no
    judge: utils/multiple_choice.py extract_answer_from_item -> can_infer, else 'Z').
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import string
from pathlib import Path
from typing import Any

import numpy as np

MODEL = "Qwen__Qwen2.5-VL-7B-Instruct"


# ------------------------------------------------------------- the harnesses' scoring ----

def lvb_parse(response: str, all_choices: list[str]) -> str:
    s = response.strip()
    for p in ["The best answer is", "The correct answer is", "The answer is", "The answer",
              "The best option is", "The correct option is", "Best answer:", "Best option:"]:
        s = s.replace(p, "")
    if len(s.split()) > 10 and not re.search("[ABCDE]", s):
        return random.choice(all_choices)
    matches = re.search(r"[ABCDE]", s)
    if matches is None:
        return random.choice(all_choices)
    return matches[0]


_PRIORITY = {"start": 10, "end": 9, "phrase": 7, "parentheses": 6, "period": 5, "colon": 4,
             "right_paren": 3, "space": 2, "fallback": 0}


def extract_mcq_answer(response: str, choices: list[str]) -> str:
    if not response or not response.strip():
        return ""
    text = response.strip()
    for char in [",", ".", "!", "?", ";", ":", "'", '"']:
        text = text.strip(char)
    text = " " + text + " "
    candidates: list = []
    for fmt, pat in (("parentheses", "({})"), ("period", "{}."), ("colon", "{}:"),
                     ("right_paren", "{})"), ("space", "{} ")):
        for ch in choices:
            if pat.format(ch) in text:
                candidates.append((ch, text.rfind(pat.format(ch)), fmt))
    text_lower = text.lower()
    for phrase in ["the answer is", "answer is", "the correct answer is", "correct answer is",
                   "the best answer is", "best answer is", "the correct option is",
                   "correct option is", "the best option is", "best option is", "the choice is",
                   "choice is", "the correct choice is", "correct choice is", "i choose",
                   "i select", "i pick", "my answer is", "my choice is", "옵션", "정답은", "답은",
                   "답:", "答案是", "答案为", "选", "答えは"]:
        idx = text_lower.find(phrase)
        if idx != -1:
            for ch in choices:
                pos = text.find(ch, idx + len(phrase))
                if pos != -1:
                    candidates.append((ch, pos, "phrase"))
    stripped = text.strip()
    for ch in choices:
        if stripped.startswith(ch) and (len(stripped) == 1 or not stripped[1].isalpha()):
            candidates.append((ch, 0, "start"))
    for ch in choices:
        if stripped.endswith(ch) and (len(stripped) == 1 or not stripped[-2].isalpha()):
            candidates.append((ch, len(text) - 1, "end"))
    if not candidates:
        for ch in choices:
            if ch in text:
                candidates.append((ch, text.rfind(ch), "fallback"))
    if not candidates:
        return ""
    candidates.sort(key=lambda x: (_PRIORITY.get(x[2], 0), x[1]), reverse=True)
    return candidates[0][0]


def mvbench_mcq_acc(answer: str, pred: str) -> int:
    period_strip = re.compile(r"(?!<=\d)(\.)(?!\d)")
    comma_strip = re.compile(r"(\d)(\,)(\d)")
    punct = [";", r"/", "[", "]", '"', "{", "}", "(", ")", "=", "+", "\\", "_", "-", ">", "<",
             "@", "`", ",", "?", "!"]

    def process_punctuation(in_text: str) -> str:
        out = in_text
        for p in punct:
            if (p + " " in in_text or " " + p in in_text) or re.search(comma_strip, in_text):
                out = out.replace(p, "")
            else:
                out = out.replace(p, " ")
        return period_strip.sub("", out, re.UNICODE)

    def process(a: str) -> str:
        match = re.compile(r"^([A-E])\.\s*(.+)$", re.IGNORECASE).match(a.strip())
        if match:
            return match.group(1).upper()
        a = process_punctuation(a.replace("\n", " ").replace("\t", " ").strip())
        a = a.strip("'").strip('"').strip(")").strip("(").strip().lower()
        letter = re.search(r"\b([A-E])\b", a, re.IGNORECASE)
        return letter.group(1).upper() if letter else a

    return 1 if process(pred) == process(answer) else 0


def mmmu_parse(response: str, all_choices: list[str], index2ans: dict[str, str],
               egoschema: bool) -> str | None:
    """NExT-QA's parse_multi_choice_response (egoschema=False) and EgoSchema's (True);
    None where the harness draws a random letter."""
    for char in [",", ".", "!", "?", ";", ":", "'"]:
        response = response.strip(char)
    response = " " + response + " "
    index_ans, brack, candidates = True, False, []
    for shape in ("({})", "{} ", "{}."):
        if candidates and not egoschema:
            break
        for choice in all_choices:
            if shape.format(choice) in response:
                candidates.append(shape.format(choice) if egoschema else choice)
                brack = brack or shape == "({})"
    if not candidates and len(response.split()) > 5:
        for index, ans in index2ans.items():
            if ans.lower() in response.lower():
                candidates.append(index)
                index_ans = False
    if not candidates:
        return None
    if len(candidates) == 1:
        return candidates[0].replace("(", "").replace(")", "").replace(".", "").strip()
    if not index_ans:
        starts = [response.lower().rfind(index2ans[c].lower()) for c in candidates]
    elif egoschema:
        starts = [response.rfind(c) for c in candidates]
    else:
        starts = [response.rfind(f"({c})" if brack else f" {c} ") for c in candidates]
    pick = candidates[int(np.argmin(starts) if egoschema else np.argmax(starts))]
    return pick.replace("(", "").replace(")", "").replace(".", "").strip()


def tempcompass_rating(pred: str, answer: str) -> int:
    if pred == answer:
        return 1
    if pred in ["A", "B", "C", "D"]:
        return 1 if pred == answer[0] else 0
    if any(pred.startswith(p) for p in ["A.", "B.", "C.", "D."]):
        return 1 if pred.split(".")[0] == answer[0] else 0
    if any(pred.startswith(p) for p in ["A)", "B)", "C)", "D)"]):
        return 1 if pred.split(")")[0] == answer[0] else 0
    return 0  # the GPT-3.5 judge: unreachable without an OpenAI key, rating 0


def perceptiontest_pred(pred: str) -> int:
    match = re.search(r"\b([A-D])\b", pred.strip())
    return {"A": 0, "B": 1, "C": 2, "D": 3}.get(match.group(1) if match else "", -1)


def naive_letter(reply: str) -> str:
    """A naive reading: the first capital A-E anywhere."""
    match = re.search(r"[A-E]", reply)
    return match.group(0) if match else ""


def vlm_lvb_letter(s: str) -> str:
    s = s.strip()
    for p in ["The best answer is", "The correct answer is", "The answer is", "The answer",
              "The best option is" "The correct option is", "Best answer:" "Best option:",
              "Answer:", "Option:"]:
        s = s.replace(p, "")
    if len(s.split()) > 10 and not re.search("[ABCDE]", s):
        return ""
    matches = re.search(r"[ABCDE]", s)
    return "" if matches is None else matches[0]


def vlm_can_infer(answer: str, choices: dict[str, str]) -> str | bool:
    answer_mod = answer
    for c in ".()[],:;!*#{}":
        answer_mod = answer_mod.replace(c, " ")
    splits = [x.strip() for x in answer_mod.split()]
    count = sum(1 for c in choices if c in splits)
    if count == 1:
        for ch in choices:
            if ch in splits and splits.index(ch) > (len(splits) - 5):
                return ch
    elif count == 0 and sum(1 for c in ("Z", "") if c in splits) == 1:
        return "Z"
    match = re.search(r"(?i)(?:correct\s+)?answer\s+is\s+\**([ABCD])\**", answer or "")
    if match and match.group(1).upper() in choices:
        return match.group(1).upper()
    low = answer.lower()
    if len(low) > 2 * sum(len(str(v)) for v in choices.values()):
        return False
    cands = [k for k in choices if str(choices[k]).lower() in low]
    return cands[0] if len(cands) == 1 else False


def vlm_mvbench_score(pred: str, gt: str, choices: dict[str, str], letter: str) -> int:
    pred_option = pred.lower().strip().split(" ")[0]
    gt_option = gt.lower().strip().split(" ")[0]
    if pred_option.replace(".", "") in gt_option or gt_option in pred_option:
        return 1
    inferred = vlm_can_infer(pred, dict(choices))
    return int((inferred or "Z") == letter)


# ------------------------------------------------------------- made-up questions ----------

def _words(rng: random.Random, k: int) -> list[str]:
    pool = ["a red cup", "the blue door", "a dog", "two bikes", "the kettle", "a green ball",
            "the window", "a paper bag", "the stairs", "a laptop", "the river", "a hat"]
    return rng.sample(pool, k)


def questions(name: str, n: int = 12) -> list[dict[str, Any]]:
    """The benchmark's release rows (the doc lmms-eval loads), made up."""
    from split_assets.demo import shapes

    rng = random.Random(name)
    if name == "longvideobench":
        return shapes.longvideobench(seed=3, scale=0.02).rows
    if name == "mvbench":
        return shapes.mvbench(seed=3, per_task=max(1, n // 6)).rows
    out = []
    for i in range(n):
        opts, k = _words(rng, 5), rng.randrange(4)
        video = f"{name[:4]}vid{i // 2:03d}"
        out.append(_row(name, i, video, opts, k, rng))
    return out


def _row(name: str, i: int, video: str, opts: list[str], k: int,
         rng: random.Random) -> dict[str, Any]:
    q = f"What does the person hold at moment {i}?"
    if name == "mlvu":
        lines = "\n".join(f"({'ABCD'[j]}) {o}" for j, o in enumerate(opts[:4]))
        return {"video_name": f"{video}.mp4", "question": f"{q}\n{lines}", "answer": "ABCD"[k],
                "task_type": ["plotQA", "needle", "ego", "count"][i % 4],
                "question_id": f"mlvu_{i}"}
    if name == "nextqa":
        return {"video": video, "question": q.lower(), "answer": k, "qid": i % 2,
                "type": "CW", **{f"a{j}": o for j, o in enumerate(opts)}}
    if name == "egoschema":
        return {"question_idx": f"ego-{i:04d}", "question": q, "video_idx": video,
                "option": [f"{'ABCDE'[j]}. {o}" for j, o in enumerate(opts)], "answer": str(k)}
    if name == "tempcompass":
        lines = [f"{'ABCD'[j]}. {o}" for j, o in enumerate(opts[:4])]
        return {"video_id": video, "question": q + "\n" + "\n".join(lines),
                "answer": lines[k], "dim": ["action", "speed", "direction", "order"][i % 4]}
    return {"video_name": video, "question": q, "question_id": f"{video}_q{i}",
            "options": opts[:3], "answer_id": str(k % 3), "area": ["physics", "memory"][i % 2],
            "reasoning": "descriptive", "tag": ["motion"]}


def answer_letter(name: str, row: dict[str, Any]) -> str:
    if name == "longvideobench":
        return "ABCDE"[int(row["correct_choice"])]
    if name == "mvbench":
        return "ABCDE"[row["candidates"].index(row["answer"])]
    if name in ("mlvu",):
        return row["answer"]
    if name == "tempcompass":
        return row["answer"][0]
    if name == "perceptiontest":
        return "ABC"[int(row["answer_id"])]
    return "ABCDE"[int(row["answer"])]


TRICKY = {  # replies where the harness's rule and a naive first capital A-E disagree
    "longvideobench": "Best answer: {L}", "mlvu": "I pick ({W}), not {L}",
    "mvbench": "It is a ({L})", "nextqa": "A woman opens it, so ({L})",
    "egoschema": "Considering everything, {L}", "tempcompass": "The answer is {L}",
    "perceptiontest": "Evidently {L}",
}


def replies(name: str, rows: list[dict[str, Any]], run: str) -> list[str]:
    """A run's replies: right or wrong letters in several styles, and the tricky ones."""
    rng = random.Random(f"{name}/{run}")
    out = []
    for i, row in enumerate(rows):
        right = answer_letter(name, row)
        k = _n_options(name, row)
        wrong = "ABCDE"[("ABCDE".index(right) + 1 + rng.randrange(k - 1)) % k]
        letter = right if rng.random() < 0.6 else wrong
        style = 0 if i < 3 else (i + rng.randrange(3)) % 6
        if style == 0:
            out.append(TRICKY[name].format(L=letter, W=wrong if letter == right else right))
        elif style == 1:
            out.append(f"({letter})")
        elif style == 2:
            out.append(f"{letter}.")
        elif style == 3 and name != "tempcompass":
            out.append("I cannot tell from these frames.")
        else:
            out.append(letter)
    return out


def _n_options(name: str, row: dict[str, Any]) -> int:
    if name == "longvideobench":
        return len(row["candidates"])
    if name == "mvbench":
        return len(row["candidates"])
    return {"mlvu": 4, "tempcompass": 4, "perceptiontest": 3}.get(name, 5)


# ------------------------------------------------------------- lmms-eval lines -------------

TASKS = {"longvideobench": "longvideobench_val_v", "mlvu": "mlvu_dev", "nextqa": "nextqa_mc_test",
         "egoschema": "egoschema_subset", "tempcompass": "tempcompass_multi_choice",
         "perceptiontest": "perceptiontest_val_mc"}


def lvb_doc(row: dict[str, Any]) -> dict[str, Any]:
    """The HF row lmms-eval loads: option0..option4, "N/A" for the unused ones."""
    doc = {k: v for k, v in row.items() if k != "candidates"}
    doc.update({f"option{i}": (row["candidates"][i] if i < len(row["candidates"]) else "N/A")
                for i in range(5)})
    doc.update(video_path=f"{row['video_id']}.mp4", subtitle_path=f"{row['video_id']}_en.json",
               starting_timestamp_for_subtitles=0.0)
    return doc


def metrics(name: str, doc: dict[str, Any], reply: str) -> tuple[dict[str, Any], Any]:
    """process_results of the task (the reply stripped, as lmms-eval passes it) and target."""
    pred = reply.strip()
    if name == "longvideobench":
        choices = [chr(65 + i) for i in range(5) if doc[f"option{i}"] != "N/A"]
        idx = doc["id"]
        return {"lvb_acc": {"id": idx, "duration_group": doc["duration_group"],
                            "question_category": doc["question_category"],
                            "answer": chr(65 + doc["correct_choice"]),
                            "parsed_pred": lvb_parse(pred, choices)},
                "submission": {idx: pred}}, doc["correct_choice"]
    if name == "mlvu":
        return {"mlvu_percetion_score": {"question_id": doc["question"],
                                         "task_type": doc["task_type"],
                                         "pred_answer": extract_mcq_answer(pred, list("ABCD")),
                                         "answer": doc["answer"]}}, doc["answer"]
    if name == "mvbench":
        gt = string.ascii_uppercase[doc["candidates"].index(doc["answer"])]
        return {"mvbench_accuracy": {"pred_answer": pred, "gt_answer": gt,
                                     "score": mvbench_mcq_acc(gt, pred)}}, doc["answer"]
    if name == "nextqa":
        index2ans = {"ABCDE"[i]: doc[f"a{i}"].strip() for i in range(5)}
        parsed = mmmu_parse(pred, list("ABCDE"), index2ans, False) or random.choice("ABCDE")
        return {"exact_match": parsed == "ABCDE"[doc["answer"]]}, doc["answer"]
    if name == "egoschema":
        index2ans = {"ABCDE"[i]: doc["option"][i].strip() for i in range(5)}
        parsed = mmmu_parse(pred, list("ABCDE"), index2ans, True) or random.choice("ABCDE")
        index = {"A": 0, "B": 1, "C": 2, "D": 3, "E": 4}.get(parsed, -1)
        return {"submission": {doc["video_idx"]: index},
                "score": {"pred": index, "ground_truth": doc["answer"]}}, doc["answer"]
    if name == "tempcompass":
        rating = tempcompass_rating(pred, doc["answer"])
        value = {"video_id": doc["video_id"], "question": doc["question"],
                 "gt-answer": doc["answer"], "video-llm-prediction": pred,
                 "match_success": bool(re.match(r"^[A-D]([.)]|$)", pred)), "rating": rating,
                 "dim": doc["dim"]}
        return {"avg_accuracy": value, f"{doc['dim']}_accuracy": value}, doc["answer"]
    index = perceptiontest_pred(pred)
    return {"accuracy": {"video_name": doc["video_name"], "question": doc["question"],
                         "pred_id": index, "answer_id": doc["answer_id"],
                         "correct": 1 if index == int(doc["answer_id"]) else 0}}, \
        doc["answer_id"]


def lmms_line(name: str, doc_id: int, doc: dict[str, Any], reply: str,
              with_doc: bool) -> dict[str, Any]:
    """One line: v0.3 (with doc, lists) or v0.7 (no doc, filtered_resps a string)."""
    found, target = metrics(name, doc, reply)
    line: dict[str, Any] = {"doc_id": doc_id, "target": str(target)}
    if with_doc:
        line.update(doc=doc, arguments={"0": "max_new_tokens", "1": "temperature"},
                    resps=[[reply]], filtered_resps=[reply])
    else:
        line.update(filtered_resps=reply, token_counts=[None])
    line["doc_hash"] = hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()
    line["input"] = f"{doc.get('question', '')}\nAnswer with the option's letter."
    line.update(found)
    return line


def write_lmms(folder: Path, name: str, rows: list[dict[str, Any]], reply_list: list[str],
               with_doc: bool, date: str = "20260801_101500") -> list[Path]:
    """<folder>/<model>/<date>_samples_<task>.jsonl (MVBench: one file per subtask)."""
    random.seed(0)  # lmms-eval seeds python's random with 0 (its --seed default)
    out = folder / MODEL
    out.mkdir(parents=True, exist_ok=True)
    by_task: dict[str, list[str]] = {}
    counters: dict[str, int] = {}
    for row, reply in zip(rows, reply_list, strict=True):
        task = f"mvbench_{row['task']}" if name == "mvbench" else TASKS[name]
        doc_id = counters.get(task, 0)
        counters[task] = doc_id + 1
        doc = (lvb_doc(row) if name == "longvideobench" else
               {k: v for k, v in row.items() if k != "task"} if name == "mvbench" else row)
        by_task.setdefault(task, []).append(json.dumps(lmms_line(name, doc_id, doc, reply,
                                                                 with_doc), ensure_ascii=False))
    paths = []
    for task, lines in by_task.items():
        path = out / f"{date}_samples_{task}.jsonl"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        paths.append(path)
    return paths


def write_annotations(folder: Path, name: str, rows: list[dict[str, Any]]) -> list[Path]:
    """The benchmark's own rows: lvb_val.json; MVBench's json/<subtask>.json; else the HF
    split lmms-eval loads, one JSON row per line."""
    folder.mkdir(parents=True, exist_ok=True)
    if name == "longvideobench":
        path = folder / "lvb_val.json"
        path.write_text(json.dumps(rows, ensure_ascii=False), encoding="utf-8")
        return [path]
    if name == "mvbench":
        tasks: dict[str, list] = {}
        for row in rows:
            tasks.setdefault(row["task"], []).append({k: v for k, v in row.items()
                                                      if k != "task"})
        for task, part in tasks.items():
            (folder / f"{task}.json").write_text(json.dumps(part), encoding="utf-8")
        return sorted(folder / f"{t}.json" for t in tasks)
    path = folder / f"{name}.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return [path]


def question_id(name: str, rows: list[dict[str, Any]], i: int) -> str:
    """Our question id of row ``i`` (the profile's)."""
    row = rows[i]
    if name == "longvideobench":
        return row["id"]
    if name == "mvbench":
        place = sum(1 for r in rows[:i] if r["task"] == row["task"])
        return f"{row['task']}-{place:05d}"
    if name == "egoschema":
        return row["question_idx"]
    if name == "perceptiontest":
        return row["question_id"]
    return f"{name}-{i:05d}"


def verdict_of(name: str, line: dict[str, Any]) -> bool:
    """The harness's own verdict, read off the line as its aggregation does."""
    if name == "longvideobench":
        return line["lvb_acc"]["parsed_pred"] == line["lvb_acc"]["answer"]
    if name == "mlvu":
        m = line["mlvu_percetion_score"]
        return m["pred_answer"] == m["answer"]
    if name == "mvbench":
        return line["mvbench_accuracy"]["score"] == 1
    if name == "nextqa":
        return line["exact_match"]
    if name == "egoschema":
        return str(line["score"]["pred"]) == str(line["score"]["ground_truth"])
    if name == "tempcompass":
        return line["avg_accuracy"]["rating"] == 1
    return line["accuracy"]["correct"] == 1


def by_chance(name: str, reply: str, row: dict[str, Any]) -> bool:
    """Whether the harness drew a letter at random for this reply (its verdict is a coin)."""
    if name == "longvideobench":
        return lvb_parse(reply.strip(), ["_"]) == "_"
    if name == "nextqa":
        index2ans = {"ABCDE"[i]: row[f"a{i}"].strip() for i in range(5)}
        return mmmu_parse(reply.strip(), list("ABCDE"), index2ans, False) is None
    if name == "egoschema":
        index2ans = {"ABCDE"[i]: row["option"][i].strip() for i in range(5)}
        return mmmu_parse(reply.strip(), list("ABCDE"), index2ans, True) is None
    return False


# ------------------------------------------------------------- VLMEvalKit tables ------------

MVBENCH_TITLES = {"action_sequence": "Action Sequence", "action_prediction": "Action Prediction"}


def _title(task: str) -> str:
    return MVBENCH_TITLES.get(task, task.replace("_", " ").title())


def vlm_rows(name: str, rows: list[dict[str, Any]], reply_list: list[str]) -> list[dict]:
    """The prediction table's rows: the dataset TSV's columns + prediction + score."""
    out = []
    for i, (row, reply) in enumerate(zip(rows, reply_list, strict=True)):
        letter = answer_letter(name, row)
        if name == "longvideobench":
            rec = {**row, "index": i, "video": row["video_id"],
                   "video_path": f"./videos/{row['video_id']}.mp4",
                   "candidates": str(list(row["candidates"]))}
            rec["score"] = int(vlm_lvb_letter(reply) == letter)
        else:
            choices = {"ABCDE"[j]: c for j, c in enumerate(row["candidates"])}
            rec = {"index": i, "task_type": _title(row["task"]), "prefix": f"./{row['task']}/",
                   "data_type": "video", "bound": False, "start": 0.0, "end": 0.0,
                   "video": row["video"], "question": row["question"], "answer": row["answer"],
                   "candidates": str(list(row["candidates"]))}
            rec["score"] = vlm_mvbench_score(reply, f"({letter}) {row['answer']}", choices,
                                             letter)
        rec["prediction"] = reply
        out.append(rec)
    return out


def write_vlm(path: Path, name: str, rows: list[dict[str, Any]], reply_list: list[str],
              score: bool = True) -> Path:
    """<model>_<dataset>_8frame.xlsx (score=True: its _score table, with the score column)."""
    import pandas as pd

    frame = pd.DataFrame(vlm_rows(name, rows, reply_list))
    if not score:
        frame = frame.drop(columns=["score"])
    frame.to_excel(path, index=False)
    return path
