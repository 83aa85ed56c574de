"""The records of a benchmark's JSON or JSONL file, each with where it came from (file, line,
index); NaN and Infinity, which ``json.loads`` takes but JSON does not have, are refused where
they stand."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from split_assets.errors import InputError

# NaN / Infinity outside JSON strings (json.loads accepts them; they are not JSON)
_NON_FINITE = re.compile(r'"(?:[^"\\]|\\.)*"|(-?Infinity|NaN)')


class _NonFinite:
    """What ``parse_constant`` puts in place of NaN / Infinity, so the record can be named."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


def _loads(text: str) -> tuple[Any, bool]:
    """``json.loads`` that marks NaN / Infinity instead of turning them into floats; the flag
    says whether any was found."""
    found: list[str] = []

    def constant(name: str) -> _NonFinite:
        found.append(name)
        return _NonFinite(name)

    return json.loads(text, parse_constant=constant), bool(found)


def _non_finite_at(value: Any, here: str) -> tuple[str, str] | None:
    """(field path, constant) of the first NaN / Infinity in a parsed value."""
    if isinstance(value, _NonFinite):
        return here, value.name
    if isinstance(value, dict):
        items: Iterator[tuple[str, Any]] = ((f"{here}.{k}", v) for k, v in value.items())
    elif isinstance(value, list):
        items = ((f"{here}[{i}]", v) for i, v in enumerate(value))
    else:
        return None
    for where, item in items:
        hit = _non_finite_at(item, where)
        if hit is not None:
            return hit
    return None


def _refuse_non_finite(path: Path, text: str, record: Any, here: str, line: int | None) -> None:
    hit = _non_finite_at(record, here)
    if hit is None:
        return
    field_path, name = hit
    if line is None:  # the first constant outside a string: its line in the file
        match = next(m for m in _NON_FINITE.finditer(text) if m.group(1))
        line = text.count("\n", 0, match.start()) + 1
    raise InputError(f"{name} is not a valid JSON value (in {field_path})", f"{path}:{line}",
                     "write a finite number, or null, instead")


def json_records(path: Path) -> Iterator[tuple[str, Any]]:
    """(location, record) pairs of one benchmark file."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise InputError("the file is not UTF-8 text", str(path), "save it as UTF-8") from None
    if path.suffix == ".jsonl":
        for lineno, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                try:
                    record, non_finite = _loads(line)
                except json.JSONDecodeError as exc:
                    raise InputError(f"invalid JSON line: {exc.msg}", f"{path}:{lineno}",
                                     "fix or remove the line") from None
                if non_finite:
                    _refuse_non_finite(path, line, record, f"{path.name}:{lineno}", lineno)
                yield f"{path.name}:{lineno}", record
        return
    try:
        data, non_finite = _loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON: {exc.msg} at line {exc.lineno}", str(path),
                         "fix the file") from None
    if not isinstance(data, list):
        yield from _single_record(path, text, data, non_finite)
        return
    if non_finite:
        for index, item in enumerate(data):
            _refuse_non_finite(path, text, item, f"{path.name}[{index}]", None)
    for index, item in enumerate(data):
        yield f"{path.name}[{index}]", item


def _single_record(path: Path, text: str, data: Any,
                   non_finite: bool) -> Iterator[tuple[str, Any]]:
    """A .json file holding one object: one record when it is a question or a video of the
    official layout, else refused at the file (a wrapper such as ``{"data": [...]}``)."""
    if not isinstance(data, dict) or not _RECORD_KEYS & set(data):
        kind = "a JSON object" if isinstance(data, dict) else f"a JSON {json_kind(data)}"
        keys = (f" (keys: {', '.join(sorted(map(str, data))[:8]) or 'none'})"
                if isinstance(data, dict) else "")
        raise InputError(f"the benchmark file holds {kind}{keys}, not a list of videos or "
                         "questions", str(path),
                         "write a JSON list: [{video_id, duration, ..., questions: [...]}, ...] "
                         "(official layout) or [{question_id, video_id, ...}, ...], or one "
                         "record per line in a .jsonl file")
    if non_finite:
        _refuse_non_finite(path, text, data, path.name, None)
    yield path.name, data


_RECORD_KEYS = {"question_id", "questions"}


def json_kind(value: Any) -> str:
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if value is None:
        return "null"
    return "number"
