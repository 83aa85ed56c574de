"""Benchmark profiles: how a harness's record of a question (an lmms-eval ``doc``, a row of
the benchmark's release file, a VLMEvalKit table row) becomes one of our questions, how a
sample line names its question and the harness's own verdict, and which letter rule scores
the workspace. Each was read from the harness's task code (lmms-eval @ 75571cfe0fa3:
``lmms_eval/tasks/<task>/utils.py`` and the task YAML; VLMEvalKit @ e8e78f05f308:
``vlmeval/dataset/<name>.py``; docs/research/issue26_*.md quote them). ``--map FILE.yaml``
builds a profile of the same shape for any other benchmark (importing/field_map.py).
"""

from __future__ import annotations

import ast
import contextlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from split_assets.errors import InputError

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
_OPTION_LINE = re.compile(r"^\s*\(?[A-Z][.)]\s")


@dataclass(frozen=True)
class FieldMap:
    """Field names of a record. ``question_id`` None: the record's position (lmms-eval's
    ``doc_id``), prefixed with the subtask; ``options`` one list field (or a Python-list
    string) or several fields; ``options_in_question``: the options are lines of the
    question; ``task_type`` None: one type for every question (``single_type``)."""

    question_id: str | None
    video_id: str
    question: str
    options: tuple[str, ...]
    answer: str
    answer_is: Literal["letter", "index", "text", "option"]
    task_type: str | None
    difficulty: str | None = None
    drop_options: tuple[str, ...] = ("N/A",)  # the options end at the first of these
    options_in_question: bool = False
    single_type: str = "all"
    or_list: str | None = None  # the options as one list where the fields are absent

    def question_of(self, doc: dict[str, Any], position: int, prefix: str,
                    where: str) -> dict[str, Any]:
        """Our flat question record of ``doc`` (refused in one line when it cannot be)."""
        missing = [f for f in self._needed(doc) if doc.get(f) in (None, "")]
        if missing:
            raise InputError(f"the record lacks {', '.join(missing)}", where,
                             "pass records of this benchmark (or name its fields in --map)")
        text, options = self._options(doc, where)
        answer = self._answer(doc, options, where)
        qid = (str(doc[self.question_id]) if self.question_id is not None
               else f"{prefix}-{position:05d}")
        record = {"question_id": qid, "video_id": safe_id(doc[self.video_id]),
                  "task_type": (prefix if self.task_type == "<subtask>" else
                                str(doc[self.task_type]) if self.task_type else
                                self.single_type),
                  "question": text, "options": options, "answer": answer}
        if self.difficulty is not None:
            record[self.difficulty] = doc[self.difficulty]
        return record

    def _needed(self, doc: dict[str, Any]) -> list[str]:
        named = [self.video_id, self.question, self.answer, self.question_id, self.difficulty]
        named += [] if self.task_type in (None, "<subtask>") else [self.task_type]
        named += [] if self.options_in_question or len(self.options) > 1 else list(self.options)
        named += [self.options[0]] if len(self.options) > 1 and self.or_list not in doc else []
        return [f for f in named if f is not None]

    def _options(self, doc: dict[str, Any], where: str) -> tuple[str, list[str]]:
        text = str(doc[self.question])
        if self.options_in_question:
            lines = text.split("\n")
            options = [line.strip() for line in lines if _OPTION_LINE.match(line)]
            text = "\n".join(line for line in lines if not _OPTION_LINE.match(line)).strip()
        elif len(self.options) == 1 or (self.or_list and self.or_list in doc):
            name = self.options[0] if len(self.options) == 1 else str(self.or_list)
            options = _list_of(doc[name], name, where)
        else:
            options = [str(doc[f]) for f in self.options if doc.get(f) is not None]
        # the options end at the first placeholder (LongVideoBench's "N/A", as its harness)
        cut = next((i for i, o in enumerate(options) if o.strip() in self.drop_options),
                   len(options))
        kept = options[:cut]
        if len(kept) < 2:
            raise InputError(f"the question has {len(kept)} option(s)", where,
                             "pass records whose options are filled in")
        return text, kept

    def _answer(self, doc: dict[str, Any], options: list[str], where: str) -> str:
        raw = doc[self.answer]
        letters = [chr(ord("A") + i) for i in range(len(options))]
        if self.answer_is == "text":
            if str(raw) not in options:
                raise InputError(f"answer {str(raw)[:40]!r} is not one of the options", where,
                                 "pass the benchmark's own records")
            return letters[options.index(str(raw))]
        if self.answer_is == "index":
            try:
                index = int(str(raw).strip())
            except ValueError:
                index = -1
            letter = letters[index] if 0 <= index < len(letters) else f"index {raw!r}"
        else:
            letter = str(raw).strip()[:1].upper() if self.answer_is == "option" else str(raw)
        if letter not in letters:
            raise InputError(f"answer {letter} is outside the question's options "
                             f"({', '.join(letters)})", where,
                             "pass records whose answer is one of their options")
        return letter


def safe_id(value: Any) -> str:
    """A video id the workspace can use as a folder name (a path's file name, no suffix)."""
    name = str(value).strip().replace("\\", "/").rsplit("/", 1)[-1]
    name = re.sub(r"\.(mp4|mkv|webm|avi)$", "", name, flags=re.I)
    return _UNSAFE.sub("_", name) or "_"


def _list_of(value: Any, name: str, where: str) -> list[str]:
    if isinstance(value, str) and value.lstrip().startswith("["):
        with contextlib.suppress(ValueError, SyntaxError):  # VLMEvalKit writes Python literals
            value = ast.literal_eval(value)
    if not isinstance(value, list | tuple) or not all(isinstance(o, str) for o in value):
        raise InputError(f"{name} is not a list of options", where,
                         "keep the options as the benchmark writes them")
    return list(value)


Verdict = Callable[[dict[str, Any]], tuple[bool | None, str | None]]


@dataclass(frozen=True)
class Profile:
    """One benchmark as a harness writes it. ``verdict``: the harness's own correctness of a
    line and the answer letter the line states (None where it states none)."""

    name: str
    title: str
    tasks: tuple[str, ...]          # lmms-eval task names (<date>_samples_<task>.jsonl)
    metric: str                     # the per-sample key that marks a line of this benchmark
    fields: FieldMap
    letter_rule: str
    verdict: Verdict
    annotations: str                # what --annotations takes, for the refusal's fix
    difficulty_field: str | None = None
    chance: bool = False            # the harness draws a random letter (or asks a GPT)
    withheld: str | None = None     # the refusal when the line's answer is withheld
    subtask_prefix: str | None = None  # MVBench: one task per subtask, mvbench_<subtask>
    single_type_note: str | None = None
    line_id: Callable[[dict[str, Any]], Any] | None = None  # the question id a line states
    settings: dict[str, Any] = field(default_factory=dict)  # more video_split keys (--map)
    vlmeval: tuple[str, str] | None = None  # VLMEvalKit's dataset name and letter rule

    def subtask(self, task: str | None) -> str | None:
        if self.subtask_prefix and task and task.startswith(self.subtask_prefix):
            return task[len(self.subtask_prefix):]
        return None


def _get(line: dict[str, Any], key: str) -> dict[str, Any]:
    value = line.get(key)
    return value if isinstance(value, dict) else {}


def _letter_at(index: Any) -> str | None:
    try:
        return "ABCDE"[int(str(index))]
    except (ValueError, IndexError):
        return None


def _lvb(line: dict[str, Any]) -> tuple[bool | None, str | None]:
    m = _get(line, "lvb_acc")
    return m.get("parsed_pred") == m.get("answer"), m.get("answer")


def _mlvu(line: dict[str, Any]) -> tuple[bool | None, str | None]:
    m = _get(line, "mlvu_percetion_score")
    return m.get("pred_answer") == m.get("answer"), m.get("answer")


def _mvbench(line: dict[str, Any]) -> tuple[bool | None, str | None]:
    m = _get(line, "mvbench_accuracy")
    return m.get("score") == 1, m.get("gt_answer")


def _nextqa(line: dict[str, Any]) -> tuple[bool | None, str | None]:
    value = line.get("exact_match")
    return (value if isinstance(value, bool) else None), _letter_at(line.get("target"))


def _egoschema(line: dict[str, Any]) -> tuple[bool | None, str | None]:
    m = _get(line, "score")
    truth = m.get("ground_truth")
    return str(m.get("pred")) == str(truth), _letter_at(truth)


def _tempcompass(line: dict[str, Any]) -> tuple[bool | None, str | None]:
    m = _get(line, "avg_accuracy")
    return m.get("rating") == 1, str(m.get("gt-answer") or "")[:1] or None


def _perceptiontest(line: dict[str, Any]) -> tuple[bool | None, str | None]:
    m = _get(line, "accuracy")
    return m.get("correct") == 1, _letter_at(m.get("answer_id"))


def _fields(**named: Any) -> FieldMap:
    return FieldMap(**named)


_LVB = _fields(question_id="id", video_id="video_id", question="question",
               options=tuple(f"option{i}" for i in range(5)), or_list="candidates",
               answer="correct_choice", answer_is="index", task_type="question_category",
               difficulty="duration_group")
_HF = "the rows lmms-eval loads, as JSON or JSONL in the split's order"

PROFILES: dict[str, Profile] = {p.name: p for p in (
    Profile("longvideobench", "LongVideoBench (val)",
            ("longvideobench_val_v", "longvideobench_val_i"), "lvb_acc", _LVB, "longvideobench",
            _lvb, "lvb_val.json (longvideobench/LongVideoBench, or the HF validation split)",
            difficulty_field="duration_group", chance=True,
            line_id=lambda line: _get(line, "lvb_acc").get("id"),
            vlmeval=("LongVideoBench", "vlmevalkit-longvideobench")),
    Profile("mlvu", "MLVU (dev, multiple choice)", ("mlvu_dev",), "mlvu_percetion_score",
            _fields(question_id=None, video_id="video_name", question="question",
                    options=(), answer="answer", answer_is="letter", task_type="task_type",
                    options_in_question=True),
            "mcq-extract", _mlvu, f"sy1998/MLVU_dev, split test: {_HF}"),
    Profile("mvbench", "MVBench", (), "mvbench_accuracy",
            _fields(question_id=None, video_id="video", question="question",
                    options=("candidates",), answer="answer", answer_is="text",
                    task_type="<subtask>"),
            "mvbench", _mvbench, "OpenGVLab/MVBench json/<subtask>.json, one per subtask",
            subtask_prefix="mvbench_", vlmeval=("MVBench", "vlmevalkit-mvbench")),
    Profile("nextqa", "NExT-QA (multiple choice)", ("nextqa_mc_test",), "exact_match",
            _fields(question_id=None, video_id="video", question="question",
                    options=tuple(f"a{i}" for i in range(5)), answer="answer",
                    answer_is="index", task_type=None, single_type="nextqa", drop_options=()),
            "nextqa", _nextqa, f"lmms-eval/NExTQA, config MC, split test: {_HF}", chance=True,
            single_type_note="NExT-QA's MC task logs no question type"),
    Profile("egoschema", "EgoSchema (subset)", ("egoschema_subset", "egoschema"), "score",
            _fields(question_id="question_idx", video_id="video_idx", question="question",
                    options=("option",), answer="answer", answer_is="index", task_type=None,
                    single_type="egoschema", drop_options=()),
            "egoschema", _egoschema, f"lmms-eval/egoschema, config Subset: {_HF}", chance=True,
            withheld="EgoSchema withholds the answers of its full set (task egoschema): "
                     "import egoschema_subset, the 500 questions with public answers",
            single_type_note="EgoSchema has no task types"),
    Profile("tempcompass", "TempCompass (multi-choice)", ("tempcompass_multi_choice",),
            "avg_accuracy",
            _fields(question_id=None, video_id="video_id", question="question", options=(),
                    answer="answer", answer_is="option", task_type="dim",
                    options_in_question=True),
            "tempcompass", _tempcompass, f"lmms-eval/TempCompass, multi-choice: {_HF}",
            chance=True),
    Profile("perceptiontest", "PerceptionTest (val, multiple choice)",
            ("perceptiontest_val_mc",), "accuracy",
            _fields(question_id="question_id", video_id="video_name", question="question",
                    options=("options",), answer="answer_id", answer_is="index",
                    task_type="area"),
            "perceptiontest", _perceptiontest,
            f"lmms-eval/PerceptionTest_Val, mc_question_val: {_HF}"),
)}


def profile_of_task(task: str) -> Profile | None:
    """The profile whose lmms-eval task this is (MVBench: any mvbench_<subtask>)."""
    for profile in PROFILES.values():
        if task in profile.tasks or (profile.subtask_prefix
                                     and task.startswith(profile.subtask_prefix)):
            return profile
    return None


def profile_of_line(line: dict[str, Any]) -> Profile | None:
    """The profile whose metric key the line carries (the most specific first)."""
    for name in ("longvideobench", "mlvu", "mvbench", "tempcompass", "nextqa", "perceptiontest",
                 "egoschema"):
        if isinstance(line.get(PROFILES[name].metric), dict | bool):
            return PROFILES[name]
    return None
