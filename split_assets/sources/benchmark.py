"""The benchmark: flat question records or the official Video-MME layout, read in name order."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from split_assets.config_keys import config_key
from split_assets.errors import InputError
from split_assets.lib.canonical import digest_of_list
from split_assets.sources.json_records import json_records

SAFE_VIDEO_ID = re.compile(r"^[A-Za-z0-9._-]+$")
_VIDEO_FIELDS = ("video_id", "duration", "domain", "sub_category")
_OWN_FIELDS = {"question_id", "video_id", "task_type", "answer", "question", "options",
               "choices", "evidence_spans"}
# an option that carries its letter: "A. text", "C) text", "(B) text", "D: text", "A."
_OPTION_PREFIX = re.compile(r"^\s*\(?([A-Z])\s*[.):](?:\s|$)")


@dataclass(frozen=True, slots=True)
class Question:
    """One benchmark question. ``difficulty`` is the value of the configured difficulty field."""

    question_id: str
    video_id: str
    task_type: str
    difficulty: str
    answer: str
    question: str
    options: tuple[str, ...]
    evidence_spans: tuple[tuple[float, float], ...] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def as_record(self) -> dict[str, Any]:
        """A plain dict (for digests and for rendering judge prompts)."""
        record: dict[str, Any] = dict(self.extra)
        record.update(
            question_id=self.question_id, video_id=self.video_id, task_type=self.task_type,
            difficulty=self.difficulty, answer=self.answer, question=self.question,
            options=list(self.options),
        )
        if self.evidence_spans is not None:
            record["evidence_spans"] = [list(span) for span in self.evidence_spans]
        return record


@dataclass(frozen=True)
class Levels:
    """How a question's difficulty level is read: a field (None: one level for all, "all"),
    cut at ``edges`` into ``names`` when it is numeric (LongVideoBench's seconds)."""

    field: str | None = "duration"
    edges: tuple[float, ...] | None = None
    names: tuple[str, ...] | None = None

    @classmethod
    def of(cls, field: str | None, edges: Any = None, names: Any = None) -> Levels:
        """From config values (lists, or None / empty for none)."""
        return cls(field, tuple(edges) if edges else None, tuple(names) if names else None)

    def level(self, value: Any, location: str) -> str:
        if self.field is None:
            return "all"
        if self.edges is None:
            return str(value)
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            value = None
        try:
            number = float(value) if value is not None else math.nan
        except ValueError:
            number = math.nan
        if not math.isfinite(number):
            raise InputError(f"{self.field} {value!r} is not a number to cut at "
                             f"difficulty_edges", location, "write it in seconds, or remove "
                             f"{config_key('difficulty_edges')} to use its values as levels")
        index = sum(number > edge for edge in self.edges)
        return self.level_names()[index]

    def level_names(self) -> tuple[str, ...]:
        if self.names is not None or self.edges is None:
            return self.names or ()
        e = [f"{x:g}" for x in self.edges]
        return (f"<={e[0]}", *(f"{a}-{b}" for a, b in zip(e, e[1:], strict=False)),
                f">{e[-1]}")


@dataclass(frozen=True)
class Benchmark:
    """All questions, sorted by id, with the video grouping the split works on, and the rule
    that reads an answer's option letter (``video_split.letter_rule``)."""

    questions: tuple[Question, ...]
    difficulty_field: str | None
    letter_rule: str = "videomme"

    def __post_init__(self) -> None:
        by_id = {q.question_id: q for q in self.questions}
        videos: dict[str, list[str]] = {}
        for q in self.questions:
            videos.setdefault(q.video_id, []).append(q.question_id)
        object.__setattr__(self, "by_id", by_id)
        object.__setattr__(self, "videos", {v: videos[v] for v in sorted(videos)})

    by_id: dict[str, Question] = field(init=False, repr=False)
    videos: dict[str, list[str]] = field(init=False, repr=False)

    @property
    def task_types(self) -> list[str]:
        return sorted({q.task_type for q in self.questions})

    def digest(self) -> str:
        """sha256 over the questions in id order: independent of file names and file order."""
        return digest_of_list(q.as_record() for q in self.questions)


def _flatten(location: str, record: Any) -> Iterator[tuple[str, dict[str, Any]]]:
    """Flat question records; a video record of the official layout gives one per question."""
    if not isinstance(record, dict):
        raise InputError("benchmark record is not a JSON object", location,
                         "each record must be a question or a video with a 'questions' list")
    if "questions" not in record:
        yield location, record
        return
    questions = record["questions"]
    if not isinstance(questions, list):
        raise InputError("'questions' is not a list", location, "fix the video record")
    video_level = {k: record[k] for k in _VIDEO_FIELDS if k in record}
    for index, question in enumerate(questions):
        if not isinstance(question, dict):
            raise InputError("question is not a JSON object", f"{location}.questions[{index}]",
                             "fix the record")
        merged = dict(video_level)
        merged.update(question)
        yield f"{location}.questions[{index}]", merged


def _spans(value: Any, location: str) -> tuple[tuple[float, float], ...] | None:
    if value is None:
        return None
    try:
        spans = tuple((float(a), float(b)) for a, b in value)
    except (TypeError, ValueError):
        raise InputError("evidence_spans must be a list of [start_s, end_s]", location,
                         "fix the field or remove it") from None
    for index, (start, end) in enumerate(spans):
        if not (math.isfinite(start) and math.isfinite(end)):
            raise InputError(f"evidence_spans[{index}] is [{start}, {end}]: not finite seconds",
                             location, "write each span as [start_s, end_s] in seconds")
        if start > end:
            raise InputError(f"evidence_spans[{index}] starts after it ends ({start} > {end})",
                             location, "write each span as [start_s, end_s] with start <= end")
    return spans


def option_letters(options: list[str] | tuple[str, ...]) -> list[str]:
    """The letters of a question's options: their prefixes when every option carries one
    ("A. ...", "C) ..."), else A, B, C, ... by position."""
    prefixes = [_OPTION_PREFIX.match(option) for option in options]
    if options and all(prefixes):
        return [m.group(1) for m in prefixes if m]
    return [chr(ord("A") + i) for i in range(min(len(options), 26))]


class _Shared(dict):
    """One object for equal values across a benchmark's questions: the task types, levels,
    video ids, answer letters, and often question texts and options ("How many ...", "A. 3")
    repeat, and so do the video-level fields every question of a video carries in
    ``extra`` (one dict per distinct content, never changed: ``as_record`` copies it). At
    300,000 questions this is about a third of the benchmark's memory."""

    def one(self, value: Any) -> Any:
        return self.setdefault(value, value)

    def extra(self, extra: dict[str, Any]) -> dict[str, Any]:
        if not extra:
            return _NO_EXTRA
        try:  # typed: 1, 1.0 and True are equal keys, and must stay apart
            key = tuple((self.one(k), type(v), v) for k, v in extra.items())
            hash(key)
        except TypeError:  # a list or dict value: kept as it is
            return extra
        return self.setdefault(("extra", key), {
            k: self.one(v) if type(v) is str else v for k, _, v in key})


_NO_EXTRA: dict[str, Any] = {}


def _question(location: str, rec: dict[str, Any], levels: Levels,
              shared: _Shared | None = None) -> Question:
    options = rec.get("options", rec.get("choices"))
    required = ["question_id", "video_id", "task_type", "answer", "question"]
    required += [levels.field] if levels.field is not None else []
    missing = [key for key in required if rec.get(key) in (None, "")]
    if options is None:
        missing.append("options")
    if missing:
        raise InputError(f"question is missing required field(s) {', '.join(missing)}", location,
                         f"add them (difficulty_field is set in {config_key('difficulty_field')})")
    video_id = str(rec["video_id"])
    if not SAFE_VIDEO_ID.match(video_id) or video_id in (".", ".."):
        raise InputError(f"unsafe video_id {video_id!r}", location,
                         "video ids may use only letters, digits, '.', '_' and '-'")
    if not isinstance(options, list) or not all(isinstance(o, str) for o in options):
        raise InputError("options must be a list of strings", location, "fix the field")
    answer = str(rec["answer"]).strip().upper()
    if len(answer) != 1 or not ("A" <= answer <= "Z"):
        raise InputError(f"answer {rec['answer']!r} is not an option letter", location,
                         "use a single letter such as 'C'")
    letters = option_letters(options)
    if answer not in letters:
        raise InputError(f"answer {rec['answer']!r} is not one of the question's option letters "
                         f"({', '.join(letters) or 'no options'})", location,
                         "fix the answer or the options (options are 'A. text' or plain "
                         "strings lettered A, B, C, ... in order)")
    extra = {k: v for k, v in rec.items() if k not in _OWN_FIELDS and k != levels.field}
    difficulty = levels.level(rec.get(levels.field) if levels.field else None, location)
    shared = _Shared() if shared is None else shared
    return Question(
        question_id=str(rec["question_id"]), video_id=shared.one(video_id),
        task_type=shared.one(str(rec["task_type"])), difficulty=shared.one(difficulty),
        answer=shared.one(answer), question=shared.one(str(rec["question"])),
        options=shared.one(tuple(shared.one(o) for o in options)),
        evidence_spans=_spans(rec.get("evidence_spans"), location), extra=shared.extra(extra),
    )


def load_benchmark(questions_dir: Path, levels: Levels | str | None = "duration",
                   letter_rule: str = "videomme") -> Benchmark:
    """Read every ``*.json`` / ``*.jsonl`` file of ``questions_dir`` in sorted name order."""
    if not questions_dir.is_dir():
        raise InputError(f"benchmark folder not found: {questions_dir}",
                         config_key("questions_dir"),
                         f"point {config_key('questions_dir')} at the folder of *.json / *.jsonl "
                         "files")
    files = sorted(p for p in questions_dir.iterdir()
                   if p.is_file() and p.suffix in (".json", ".jsonl"))
    if not files:
        raise InputError(f"no *.json or *.jsonl files in {questions_dir}",
                         config_key("questions_dir"),
                         "add the benchmark files")
    benchmark = read_benchmark_files(files, levels, letter_rule)
    if not benchmark.questions:
        names = ", ".join(p.name for p in files[:3]) + (", ..." if len(files) > 3 else "")
        verb = "holds" if len(files) == 1 else "hold"
        raise InputError(f"the benchmark is empty: {names} in {questions_dir} {verb} no "
                         "question",
                         config_key("questions_dir"),
                         "put the benchmark's videos or questions in it (a JSON list, or JSONL), "
                         f"or point {config_key('questions_dir')} at the benchmark's folder")
    return benchmark


def read_benchmark_files(files: list[Path], levels: Levels | str | None = "duration",
                         letter_rule: str = "videomme") -> Benchmark:
    """The questions of these files (flat questions or videos of the official layout); errors
    name the file and the record."""
    if not isinstance(levels, Levels):
        levels = Levels(levels)
    seen: set[str] = set()  # (the first place of a repeated id is looked up again)
    questions: list[Question] = []
    shared = _Shared()
    for path in files:
        for location, record in json_records(path):
            for qloc, flat in _flatten(location, record):
                q = _question(qloc, flat, levels, shared)
                if q.question_id in seen:
                    first = next(where for p in files for at, r in json_records(p)
                                 for where, f in _flatten(at, r)
                                 if str(f.get("question_id")) == q.question_id)
                    raise InputError(f"duplicate question_id {q.question_id!r}",
                                     f"{qloc} and {first}",
                                     "question ids must be unique across the benchmark")
                seen.add(q.question_id)
                questions.append(q)
    questions.sort(key=lambda q: q.question_id)
    return Benchmark(questions=tuple(questions), difficulty_field=levels.field,
                     letter_rule=letter_rule)
