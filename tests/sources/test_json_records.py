"""A benchmark's JSON list is read one item at a time (issue 47: at 300,000 questions the whole
parsed file held about 1 GB in every worker), with the same records, errors and line numbers
as a whole-file parse."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from split_assets.errors import InputError
from split_assets.sources.benchmark import read_benchmark_files
from split_assets.sources.json_records import json_records


def _records(tmp_path: Path, text: str) -> list[tuple[str, object]]:
    path = tmp_path / "b.json"
    path.write_text(text, encoding="utf-8")
    return list(json_records(path))


@pytest.mark.parametrize("text", ['[{"a": 1}, {"b": [1, 2]}, 3]',
                                  ' \n[\n{"a": 1} ,{"b":[1,2]},3 ]\n', "[]", " [ ] "])
def test_the_items_are_those_of_a_whole_parse(tmp_path: Path, text: str) -> None:
    got = [record for _, record in _records(tmp_path, text)]
    assert got == json.loads(text)
    assert [where for where, _ in _records(tmp_path, text)] == [
        f"b.json[{i}]" for i in range(len(got))]


@pytest.mark.parametrize(("text", "message"), [
    ("[1,]", "invalid JSON: Expecting value at line 1"),
    ("[1 2]", "invalid JSON: Expecting ',' delimiter at line 1"),
    ('[1,\n\n{"a": }]', "invalid JSON: Expecting value at line 3"),
    ("[1] x", "invalid JSON: Extra data at line 1"),
    ("[1", "invalid JSON: Expecting ',' delimiter at line 1"),
    ('[{"a": 1},\n{"b": NaN}]', "NaN is not a valid JSON value (in b.json[1].b)"),
])
def test_a_broken_list_is_one_line_naming_where(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(InputError) as caught:
        _records(tmp_path, text)
    assert caught.value.what.startswith(message), caught.value.what
    if "NaN" in text:
        assert caught.value.where.endswith("b.json:2")


def test_questions_share_equal_values_but_keep_their_types(tmp_path: Path) -> None:
    video = {"video_id": "v1", "duration": "short", "domain": "Sport",
             "questions": [{"question_id": f"q{i}", "task_type": "Counting", "question": "?",
                            "options": ["A. x", "B. y"], "answer": "A", "flag": True}
                           for i in range(3)]}
    other = {**video, "video_id": "v2",
             "questions": [{**q, "question_id": f"r{i}", "flag": 1} for i, q in
                           enumerate(video["questions"])]}
    path = tmp_path / "b.json"
    path.write_text(json.dumps([video, other]), encoding="utf-8")
    questions = read_benchmark_files([path]).questions
    first, second = questions[0], questions[3]
    assert first.extra is questions[1].extra  # one dict for the video's fields
    assert first.extra == {"domain": "Sport", "flag": True}
    assert second.extra["flag"] == 1 and type(second.extra["flag"]) is int  # not True
    assert first.task_type is second.task_type


@pytest.mark.parametrize("chunk", [1, 3, 7, 64])
def test_items_across_chunk_boundaries(tmp_path: Path, chunk: int,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The file read a few characters at a time: numbers cut at a chunk's end, multibyte
    characters, and the line of an error counted over the dropped text."""
    from split_assets.sources import json_records as module

    monkeypatch.setattr(module, "_CHUNK", chunk)
    items = [12345, -0.5e3, "é ü 漢字", {"k": [1, 22, 333]}, True, None, [], {}]
    text = "[\n" + ",\n".join(json.dumps(x, ensure_ascii=False) for x in items) + "\n]\n"
    assert [r for _, r in _records(tmp_path, text)] == items
    broken = text.replace("333]", "333,]")
    with pytest.raises(InputError) as caught:
        _records(tmp_path, broken)
    assert caught.value.what == "invalid JSON: Expecting value at line 5"
    nan = text.replace("22", "NaN")
    with pytest.raises(InputError) as caught:
        _records(tmp_path, nan)
    assert caught.value.where.endswith("b.json:5") and "b.json[3].k[1]" in caught.value.what
