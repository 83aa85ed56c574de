"""The benchmark's own rows, for sample lines that carry no ``doc`` (lmms-eval 0.4 and later):
read from the files given with ``--annotations`` (the release's parquet, a JSON list or JSONL,
by file stem), each line's row found by the id it states, else by its ``doc_id``; and, for a
run made on a pool
task of ``split-assets export lmms-eval`` (``--pool-task``), lmms-eval's renumbered ``doc_id``
mapped back to the benchmark's rows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from split_assets.errors import InputError, UserError
from split_assets.importing.profiles import Profile


def read_rows(paths: list[Path]) -> dict[str, list[dict[str, Any]]]:
    """The benchmark's own rows (a parquet file, a JSON list, or JSONL) by file stem (MVBench:
    the subtask)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for path in paths:
        if not path.is_file():
            raise UserError(f"annotations file not found: {path}", "--annotations",
                            "pass the benchmark's release file (docs/how-to/import.md)")
        if path.suffix == ".parquet":
            out[path.stem] = _parquet_rows(path)
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise InputError("the file is not UTF-8 text", str(path), "save it as UTF-8") from None
        out[path.stem] = _records(path, text)
    return out


def _parquet_rows(path: Path) -> list[dict[str, Any]]:
    """A parquet release's rows as plain records (lists as lists, numbers as numbers)."""
    import pyarrow
    import pyarrow.parquet

    try:
        return pyarrow.parquet.read_table(path).to_pylist()
    except (pyarrow.ArrowException, OSError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"not a readable parquet file: {first}", str(path),
                         "pass the benchmark's release file as it was published") from None


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
