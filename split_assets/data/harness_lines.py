"""Import lmms-eval sample files and VLMEvalKit tables of any profiled benchmark (Video-MME
keeps its own importer, data/frameworks.py).

A sample line (a table row) becomes a question through its profile's field map: from the
line's ``doc`` (lmms-eval before v0.4), else from the benchmark's own rows given with
``--annotations`` (joined by the id the line states, else by ``doc_id``). The line's stated
answer must be its question's; the answer is the raw reply, read with the workspace's letter
rule; where the harness's own verdict differs the import says how often and why.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from split_assets.data.benchmark import Levels
from split_assets.data.frameworks import (
    FAIL_MARK,
    _cell,
    _jsonl,
    _response,
    _table,
    files_of_task,
    task_of,
)
from split_assets.data.importers import (
    ImportSummary,
    _Answer,
    _check_run_id,
    _check_workspace,
    finish_import,
    workspace_benchmark,
)
from split_assets.data.letters import letter_of
from split_assets.data.profiles import Profile
from split_assets.data.workspace_config import Built
from split_assets.errors import InputError, UserError


@dataclass
class Lines:
    """What the lines of one run said: questions, answers and the harness's verdicts."""

    questions: dict[str, dict[str, Any]] = field(default_factory=dict)
    answers: dict[str, _Answer] = field(default_factory=dict)
    verdicts: dict[str, bool | None] = field(default_factory=dict)
    seen: dict[str, str] = field(default_factory=dict)

    def add(self, question: dict[str, Any], answer: _Answer, verdict: bool | None,
            where: str) -> None:
        qid = question["question_id"]
        if qid in self.seen:
            raise InputError(f"question {qid!r} appears twice (first at {self.seen[qid]})",
                             where, "import the files of one run once")
        self.seen[qid] = where
        self.questions[qid] = question
        self.answers[qid] = answer
        self.verdicts[qid] = verdict


def read_rows(paths: list[Path]) -> dict[str, list[dict[str, Any]]]:
    """The benchmark's own rows (a JSON list, or JSONL) by file stem (MVBench: the subtask)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for path in paths:
        if not path.is_file():
            raise UserError(f"annotations file not found: {path}", "--annotations",
                            "pass the benchmark's release file (README: \"Other benchmarks\")")
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise InputError("the file is not UTF-8 text", str(path), "save it as UTF-8") from None
        out[path.stem] = _records(path, text)
    return out


def _records(path: Path, text: str) -> list[dict[str, Any]]:
    where = str(path)
    try:
        if path.suffix == ".jsonl":
            data = []
            for number, line in enumerate(text.splitlines(), start=1):
                where = f"{path}:{number}"
                if line.strip():
                    data.append(json.loads(line))
        else:
            data = json.loads(text)
    except json.JSONDecodeError as exc:
        at = where if path.suffix == ".jsonl" else f"{path}:{exc.lineno}"
        raise InputError(f"invalid JSON: {exc.msg}", at,
                         "pass the benchmark's release file as it was published") from None
    if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
        raise InputError("the annotations are not a list of records", str(path),
                         "pass the benchmark's rows: a JSON list or one record per line")
    return data


class Docs:
    """The record of each line: its ``doc``, else the annotation row it names."""

    def __init__(self, profile: Profile, rows: dict[str, list[dict[str, Any]]]) -> None:
        self.profile = profile
        self.rows = rows
        key = profile.fields.question_id if profile.line_id is not None else None
        self.by_id = {str(r.get(key)): r for part in rows.values() for r in part} if key else {}

    def doc(self, line: dict[str, Any], subtask: str | None, where: str) -> dict[str, Any]:
        if isinstance(line.get("doc"), dict):
            return line["doc"]
        fix = f"pass --annotations with {self.profile.annotations}"
        if not self.rows:
            raise InputError("the line has no doc (lmms-eval 0.4 and later leave it out)",
                             where, fix)
        stated = self.profile.line_id(line) if self.profile.line_id else None
        if stated is not None:
            if str(stated) not in self.by_id:
                raise InputError(f"question {stated!r} is not in the annotations", where, fix)
            return self.by_id[str(stated)]
        if self.profile.subtask_prefix:  # MVBench: the subtask's own file, by its name
            part = self.rows.get(subtask or "")
            if part is None:
                raise InputError(f"no annotations file for subtask {subtask!r}", where,
                                 f"pass {subtask}.json among --annotations")
        elif len(self.rows) > 1:
            raise InputError(f"{len(self.rows)} annotations files for one benchmark", where,
                             f"pass one: {self.profile.annotations}")
        else:
            part = next(iter(self.rows.values()))
        doc_id = line["doc_id"]  # a row number (lmms_line checked)
        if doc_id >= len(part):
            raise InputError(f"doc_id {doc_id!r} is not a row of the annotations "
                             f"({len(part)} rows)", where, fix)
        return part[doc_id]


def lmms_line(profile: Profile, docs: Docs, line: Any, subtask: str | None, prefix: str,
              where: str) -> tuple[dict[str, Any], str, bool | None]:
    """(question, raw reply, the harness's verdict) of one sample line."""
    if not isinstance(line, dict) or (profile.metric and not isinstance(
            line.get(profile.metric), dict | bool)):
        raise InputError(f"the line has no {profile.metric} (a line of another benchmark?)",
                         where, f"import {profile.title} samples only, or name the benchmark "
                                "with --benchmark")
    verdict, stated = profile.verdict(line)
    if stated is None and profile.withheld:
        raise InputError("the line's answer is withheld", where, profile.withheld)
    doc_id = line.get("doc_id")
    if not isinstance(doc_id, int) or isinstance(doc_id, bool) or doc_id < 0:
        raise InputError(f"doc_id {doc_id!r} is not a row number", where,
                         "pass lmms-eval's samples file as it wrote it")
    doc = docs.doc(line, subtask, where)
    question = profile.fields.question_of(doc, doc_id, prefix, where)
    if stated is not None and stated != question["answer"]:
        raise InputError(f"the line states answer {stated!r}, its record {question['answer']!r}",
                         where, "pass the annotations of the same benchmark version")
    return question, _response(line, where), verdict


def finish(profile: Profile, lines: Lines, source: Path, run_id: str, workspace: Path,
           harness: str, rule: str, **options: Any) -> ImportSummary:
    """Build the benchmark (a first import), check against the workspace's, write the run,
    and say where the harness's verdicts differ from the workspace's letter rule."""
    _check_run_id(run_id)
    _check_workspace(workspace)
    existing = workspace_benchmark(workspace)
    rule = existing.letter_rule if existing is not None else rule
    built = _built(profile, lines, source, rule)
    summary = finish_import(source, run_id, workspace, lines.answers, built=built, **options)
    summary.notes += _verdict_notes(profile, lines, rule, harness)
    if existing is None and profile.single_type_note:
        summary.notes.append(f"{profile.single_type_note}: every question is of type "
                             f"{profile.fields.single_type!r} (task types are not balanced)")
    return summary


def _built(profile: Profile, lines: Lines, source: Path, rule: str) -> Built:
    records = [lines.questions[q] for q in sorted(lines.questions)]
    data = (json.dumps(records, ensure_ascii=False, indent=1) + "\n").encode()
    settings: dict[str, Any] = {"letter_rule": rule,
                                "difficulty_field": profile.difficulty_field}
    settings.update(profile.settings)
    levels = Levels.of(profile.difficulty_field, settings.get("difficulty_edges"),
                       settings.get("difficulty_levels"))
    return Built.of(data, f"{profile.name}.json", source, levels, rule, settings)


def _verdict_notes(profile: Profile, lines: Lines, rule: str, harness: str) -> list[str]:
    differ, chance = 0, 0
    for qid, theirs in lines.verdicts.items():
        q, a = lines.questions[qid], lines.answers[qid]
        letter = letter_of(rule, a.response, a.prediction, q["options"])
        if theirs is None or theirs == (letter == q["answer"]):
            continue
        if letter == "" and profile.chance:
            chance += 1
        else:
            differ += 1
    notes = []
    if chance:
        notes.append(f"{chance} reply(ies) hold no letter, yet {harness} counted them right "
                     "(it drew a letter at random or asked its GPT judge): here they count as "
                     "no answer (INFRA)")
    if differ:
        notes.append(f"{harness}'s own verdict differs on {differ} answer(s) (letter rule "
                     f"{rule!r} of this workspace): kept the workspace's rule")
    return notes


def group_by_task(files: list[Path]) -> dict[str | None, list[Path]]:
    out: dict[str | None, list[Path]] = defaultdict(list)
    for path in files:
        out[task_of(path)].append(path)
    return out


def import_lmms_lines(profile: Profile, files: list[Path], run_id: str, workspace: Path,
                      annotations: list[Path], task: str | None = None,
                      pool_task: Path | None = None, **options: Any) -> ImportSummary:
    """Import the sample files of one run of a profiled benchmark (MVBench: one per subtask);
    ``pool_task``: the folder ``split-assets export lmms-eval`` wrote, when the run was made
    on it (lmms-eval numbers the docs it kept from 0: each doc_id is mapped back to its row)."""
    groups = group_by_task(files_of_task(files, task, several=bool(profile.subtask_prefix))[0])
    docs = Docs(profile, read_rows(annotations))
    kept = pool_rows(profile, docs, pool_task) if pool_task is not None else None
    lines = Lines()
    for name, paths in sorted(groups.items(), key=lambda kv: str(kv[0])):
        subtask = profile.subtask(name)
        if profile.subtask_prefix and subtask is None:
            raise UserError(f"{paths[0].name} names no {profile.title} subtask", "--samples",
                            f"pass the <date>_samples_{profile.subtask_prefix}<subtask>.jsonl "
                            "files lmms-eval wrote")
        for path in paths:
            for where, line in _jsonl(path):
                if kept is not None:
                    line = in_pool(line, kept, subtask, where)
                question, reply, verdict = lmms_line(profile, docs, line, subtask,
                                                     subtask or profile.name, where)
                lines.add(question, _Answer(None, reply, None), verdict, where)
    if workspace_benchmark(workspace) is None:  # a first import: the whole benchmark
        _every_row(profile, docs.rows, lines)
    source = files[0] if len(files) == 1 else files[0].parent
    return finish(profile, lines, source, run_id, workspace, "lmms-eval", profile.letter_rule,
                  **options)


def pool_rows(profile: Profile, docs: Docs, folder: Path) -> dict[str | None, list[int]]:
    """The annotation rows a pool task keeps, per subtask (None: the one file), in the order
    lmms-eval numbers them (``dataset.filter`` keeps the order)."""
    if not docs.rows:
        raise UserError("--pool-task needs the benchmark's rows to number them", "--pool-task",
                        f"pass --annotations with {profile.annotations}")
    ids = pool_task_ids(folder, profile.name)
    kept: dict[str | None, list[int]] = {}
    for stem, part in docs.rows.items():
        prefix = stem if profile.subtask_prefix else profile.name
        kept[stem if profile.subtask_prefix else None] = [
            i for i, row in enumerate(part)
            if profile.fields.question_of(row, i, prefix, f"{stem} record {i + 1}")[
                "question_id"] in ids]
    return kept


def pool_task_ids(folder: Path, benchmark: str) -> set[str]:
    """The question ids of the pool task ``split-assets export lmms-eval`` wrote in ``folder``
    (or its ``<name>.json``)."""
    found = []
    paths = [folder] if folder.is_file() else sorted(folder.glob("*.json"))
    for path in paths:
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(doc, dict) and isinstance(doc.get("question_ids"), list):
            found.append(doc)
    if len(found) != 1 or found[0].get("benchmark") != benchmark:
        raise UserError(f"{folder} holds no pool task of {benchmark} (one <name>.json with its "
                        "question_ids)", "--pool-task",
                        "pass the folder 'split-assets export lmms-eval' wrote for this run")
    return {str(q) for q in found[0]["question_ids"]}


def in_pool(line: Any, kept: dict[str | None, list[int]], subtask: str | None,
            where: str) -> Any:
    """The line with its doc_id mapped from the pool task's numbering to the row's."""
    rows = kept.get(subtask)
    doc_id = line.get("doc_id") if isinstance(line, dict) else None
    if rows is None or not isinstance(doc_id, int) or not 0 <= doc_id < len(rows):
        raise InputError(f"doc_id {doc_id!r} is not one of the {len(rows or [])} docs the pool "
                         "task keeps", where, "pass the --pool-task folder the run was made "
                                              "with")
    return {**line, "doc_id": rows[doc_id]}


def _every_row(profile: Profile, rows: dict[str, list[dict[str, Any]]], lines: Lines) -> None:
    """The annotations' questions the lines did not answer (a run with --limit imports
    with --partial against the whole benchmark)."""
    for stem, part in rows.items():
        prefix = stem if profile.subtask_prefix else profile.name
        for position, row in enumerate(part):
            question = profile.fields.question_of(row, position, prefix,
                                                  f"{stem} record {position + 1}")
            lines.questions.setdefault(question["question_id"], question)


def import_vlm_rows(profile: Profile, results: Path, run_id: str, workspace: Path,
                    **options: Any) -> ImportSummary:
    """Import a VLMEvalKit prediction (or _score) table of a profiled benchmark."""
    assert profile.vlmeval is not None
    rows = _table(results, ("prediction", profile.fields.video_id, profile.fields.question),
                  profile.title)
    positions = _positions(rows) if profile.subtask_prefix else {}
    known = _by_content(workspace) if profile.subtask_prefix else {}
    lines = Lines()
    for number, row in rows:
        where = f"{results} row {number}"
        subtask = _snake(_cell(row.get("task_type"))) if profile.subtask_prefix else None
        question = profile.fields.question_of(row, positions.get(number, number - 2),
                                              subtask or profile.name, where)
        # a table without some rows (VLMEvalKit leaves out a video it cannot find) would
        # shift the places: the workspace's question with the same content is the one
        question["question_id"] = known.get(_content(question), question["question_id"])
        text = _cell(row.get("prediction"))
        answer = _Answer(None, "", "error") if FAIL_MARK in text else _Answer(None, text, None)
        score = _cell(row.get("score")).strip()
        verdict = {"1": True, "1.0": True, "0": False, "0.0": False}.get(score)
        lines.add(question, answer, verdict, where)
    return finish(profile, lines, results, run_id, workspace, "VLMEvalKit", profile.vlmeval[1],
                  **options)


def _content(q: dict[str, Any]) -> tuple[Any, ...]:
    fold = " ".join(str(q["question"]).split()).casefold()
    return q["task_type"], q["video_id"], fold, tuple(o.strip() for o in q["options"])


def _by_content(workspace: Path) -> dict[tuple[Any, ...], str]:
    """The workspace's questions by content (those whose content is unique)."""
    benchmark = workspace_benchmark(workspace) if workspace.is_dir() else None
    found: dict[tuple[Any, ...], list[str]] = defaultdict(list)
    for q in benchmark.questions if benchmark is not None else ():
        found[_content({"task_type": q.task_type, "video_id": q.video_id,
                        "question": q.question, "options": q.options})].append(q.question_id)
    return {key: ids[0] for key, ids in found.items() if len(ids) == 1}


def _snake(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", name.strip().lower()).strip("_")


def _positions(rows: list[tuple[int, dict[str, Any]]]) -> dict[int, int]:
    """Each row's place within its subtask, in the order of VLMEvalKit's ``index`` (the
    order of the subtask's json file, which lmms-eval's doc_id counts too)."""
    by_task: dict[str, list[tuple[float, int]]] = defaultdict(list)
    for number, row in rows:
        try:
            index = float(_cell(row.get("index")))
        except ValueError:
            index = float(number)
        by_task[_cell(row.get("task_type"))].append((index, number))
    return {number: place for part in by_task.values()
            for place, (_, number) in enumerate(sorted(part))}
