"""The records of a benchmark's JSON or JSONL file, each with where it came from (file, line,
index); NaN and Infinity, which ``json.loads`` takes but JSON does not have, are refused where
they stand."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
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
    """(location, record) pairs of one benchmark file. A JSON list is read in chunks and its
    items parsed one at a time: a benchmark of 300,000 questions read whole held its text
    twice (bytes and str) and every record's dicts at once, about 1 GB in each worker."""
    if path.suffix != ".jsonl":
        with _utf8(path), path.open(encoding="utf-8") as handle:
            head = handle.read(_CHUNK)
            if head.lstrip(" \t\n\r").startswith("["):
                yield from _ListReader(path, handle, head).items()
                return
            text = head + handle.read()
        try:
            data, non_finite = _loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"invalid JSON: {exc.msg} at line {exc.lineno}", str(path),
                             "fix the file") from None
        yield from _single_record(path, text, data, non_finite)
        return
    with _utf8(path):
        text = path.read_text(encoding="utf-8")
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


_CHUNK = 1 << 20
_NUMBER = set("0123456789.eE+-") | {""}
_SPACE = re.compile(r"[ \t\n\r]*")


@contextmanager
def _utf8(path: Path) -> Iterator[None]:
    try:
        yield
    except UnicodeDecodeError:
        raise InputError("the file is not UTF-8 text", str(path), "save it as UTF-8") from None


class _ListReader:
    """The items of a JSON list, parsed one at a time from a window of the file's text: the
    window grows when an item runs past its end (a number that reaches it is parsed again
    with more text: it may go on), and drops what was read once past a chunk. Errors name
    the line in the whole file."""

    def __init__(self, path: Path, handle: Any, head: str) -> None:
        self.path, self.handle, self.text = path, handle, head
        self.at, self.line, self.eof = 0, 0, False  # line: newlines dropped before the window
        self.start = 0
        self.found: list[str] = []
        self.decoder = json.JSONDecoder(parse_constant=self._constant)

    def _constant(self, name: str) -> _NonFinite:
        self.found.append(name)
        return _NonFinite(name)

    def _more(self) -> bool:
        chunk = "" if self.eof else self.handle.read(_CHUNK)
        self.eof = not chunk
        if self.at > _CHUNK:  # drop what was read
            self.line += self.text.count("\n", 0, self.at)
            self.text, self.at = self.text[self.at:], 0
        self.text += chunk
        return bool(chunk)

    def _skip(self, mark: str | None = None) -> bool:
        """Past whitespace; then past ``mark`` if it is next (whether it was)."""
        while True:
            self.at = _SPACE.match(self.text, self.at).end()
            if self.at < len(self.text) or not self._more():
                break
        if mark is not None and self.text.startswith(mark, self.at):
            self.at += 1
            return True
        return False

    def _decode(self) -> Any:
        self._skip()
        while True:
            try:
                self.start = self.at  # where the item begins in the window
                record, end = self.decoder.raw_decode(self.text, self.at)
                # a number may go on in the next chunk ("-500." + "0", "1" + "e3")
                cut = isinstance(record, int | float) and self.text[end:end + 1] in _NUMBER
                if self.eof or end < len(self.text) and not cut:
                    self.at = end
                    return record
            except json.JSONDecodeError:
                if self.eof:
                    raise
            self.found.clear()
            self._more()

    def items(self) -> Iterator[tuple[str, Any]]:
        index = 0
        try:
            self._skip("[")
            closed = self._skip("]")
            while not closed:
                record = self._decode()
                if self.found:  # NaN / Infinity: named with its line
                    hit = next(m for m in _NON_FINITE.finditer(self.text, self.start)
                               if m.group(1))
                    line = self.line + self.text.count("\n", 0, hit.start()) + 1
                    _refuse_non_finite(self.path, "", record, f"{self.path.name}[{index}]",
                                       line)
                yield f"{self.path.name}[{index}]", record
                index += 1
                if not self._skip(","):
                    closed = self._skip("]")
                    if not closed:
                        raise json.JSONDecodeError("Expecting ',' delimiter", self.text, self.at)
            if self._skip() or self.at < len(self.text):
                raise json.JSONDecodeError("Extra data", self.text, self.at)
        except json.JSONDecodeError as exc:
            raise InputError(f"invalid JSON: {exc.msg} at line {self.line + exc.lineno}",
                             str(self.path), "fix the file") from None


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
