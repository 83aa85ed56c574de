"""Import lmms-eval sample files and VLMEvalKit tables of any profiled benchmark (Video-MME
keeps its own importer, importing/videomme_harnesses.py).

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

from split_assets.errors import InputError, UserError
from split_assets.importing.annotations import Docs, in_pool, pool_rows, read_rows
from split_assets.importing.harness_files import cell, read_jsonl, read_table, response_of
from split_assets.importing.profiles import Profile
from split_assets.importing.videomme_harnesses import FAIL_MARK, files_of_task, task_of
from split_assets.importing.workspace_runs import (
    ImportSummary,
    check_run_id,
    check_workspace,
    finish_import,
    workspace_benchmark,
)
from split_assets.importing.workspace_setup import Answer, BuiltBenchmark
from split_assets.sources.benchmark import Levels
from split_assets.sources.letters import letter_of


@dataclass
class HarnessLines:
    """What the lines of one run said: questions, answers and the harness's verdicts."""

    questions: dict[str, dict[str, Any]] = field(default_factory=dict)
    answers: dict[str, Answer] = field(default_factory=dict)
    verdicts: dict[str, bool | None] = field(default_factory=dict)
    seen: dict[str, str] = field(default_factory=dict)

    def add(self, question: dict[str, Any], answer: Answer, verdict: bool | None,
            where: str) -> None:
        qid = question["question_id"]
        if qid in self.seen:
            raise InputError(f"question {qid!r} appears twice (first at {self.seen[qid]})",
                             where, "import the files of one run once")
        self.seen[qid] = where
        self.questions[qid] = question
        self.answers[qid] = answer
        self.verdicts[qid] = verdict


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
    return question, response_of(line, where), verdict


def finish(profile: Profile, lines: HarnessLines, source: Path, run_id: str, workspace: Path,
           harness: str, rule: str, **options: Any) -> ImportSummary:
    """Build the benchmark (a first import), check against the workspace's, write the run,
    and say where the harness's verdicts differ from the workspace's letter rule."""
    check_run_id(run_id)
    check_workspace(workspace)
    existing = workspace_benchmark(workspace)
    rule = existing.letter_rule if existing is not None else rule
    built = _built(profile, lines, source, rule)
    summary = finish_import(source, run_id, workspace, lines.answers, built=built, **options)
    summary.notes += _verdict_notes(profile, lines, rule, harness)
    if existing is None and profile.single_type_note:
        summary.notes.append(f"{profile.single_type_note}: every question is of type "
                             f"{profile.fields.single_type!r} (task types are not balanced)")
    return summary


def _built(profile: Profile, lines: HarnessLines, source: Path, rule: str) -> BuiltBenchmark:
    records = [lines.questions[q] for q in sorted(lines.questions)]
    data = (json.dumps(records, ensure_ascii=False, indent=1) + "\n").encode()
    settings: dict[str, Any] = {"letter_rule": rule,
                                "difficulty_field": profile.difficulty_field}
    settings.update(profile.settings)
    levels = Levels.of(profile.difficulty_field, settings.get("difficulty_edges"),
                       settings.get("difficulty_levels"))
    return BuiltBenchmark.of(data, f"{profile.name}.json", source, levels, rule, settings)


def _verdict_notes(profile: Profile, lines: HarnessLines, rule: str, harness: str) -> list[str]:
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
    lines = HarnessLines()
    for name, paths in sorted(groups.items(), key=lambda kv: str(kv[0])):
        subtask = profile.subtask(name)
        if profile.subtask_prefix and subtask is None:
            raise UserError(f"{paths[0].name} names no {profile.title} subtask", "--samples",
                            f"pass the <date>_samples_{profile.subtask_prefix}<subtask>.jsonl "
                            "files lmms-eval wrote")
        for path in paths:
            for where, line in read_jsonl(path):
                if kept is not None:
                    line = in_pool(line, kept, subtask, where)
                question, reply, verdict = lmms_line(profile, docs, line, subtask,
                                                     subtask or profile.name, where)
                lines.add(question, Answer(None, reply, None), verdict, where)
    if workspace_benchmark(workspace) is None:  # a first import: the whole benchmark
        _every_row(profile, docs.rows, lines)
    source = files[0] if len(files) == 1 else files[0].parent
    return finish(profile, lines, source, run_id, workspace, "lmms-eval", profile.letter_rule,
                  **options)


def _every_row(profile: Profile, rows: dict[str, list[dict[str, Any]]],
               lines: HarnessLines) -> None:
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
    rows = read_table(results, ("prediction", profile.fields.video_id, profile.fields.question),
                  profile.title)
    positions = _positions(rows) if profile.subtask_prefix else {}
    known = _by_content(workspace) if profile.subtask_prefix else {}
    lines = HarnessLines()
    for number, row in rows:
        where = f"{results} row {number}"
        subtask = _snake(cell(row.get("task_type"))) if profile.subtask_prefix else None
        question = profile.fields.question_of(row, positions.get(number, number - 2),
                                              subtask or profile.name, where)
        # a table without some rows (VLMEvalKit leaves out a video it cannot find) would
        # shift the places: the workspace's question with the same content is the one
        question["question_id"] = known.get(_content(question), question["question_id"])
        text = cell(row.get("prediction"))
        answer = Answer(None, "", "error") if FAIL_MARK in text else Answer(None, text, None)
        score = cell(row.get("score")).strip()
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
            index = float(cell(row.get("index")))
        except ValueError:
            index = float(number)
        by_task[cell(row.get("task_type"))].append((index, number))
    return {number: place for part in by_task.values()
            for place, (_, number) in enumerate(sorted(part))}
