"""``--map FILE.yaml``: a benchmark without a built-in profile imports without code -- its
fields named, a numeric difficulty cut into named levels, one task type when it has none --
and a broken map or config is refused in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from split_assets.errors import ConfigError
from split_assets.settings import load_config
from split_assets.workspace.inputs import Inputs

MAP = """\
benchmark: clipqa
metric: clipqa_score
verdict: clipqa_score.correct
fields:
  question_id: qid
  video_id: clip
  question: prompt
  options: choices
  answer: gold
  answer_is: index
  difficulty: seconds
difficulty_edges: [60, 600]
difficulty_levels: [short, medium, long]
letter_rule: perceptiontest
"""


def _samples(path: Path, replies: list[str]) -> Path:
    lines = []
    for i, reply in enumerate(replies):
        doc = {"qid": f"c{i:03d}", "clip": f"clip{i // 2}", "prompt": f"What moves at {i}?",
               "choices": ["a car", "a cat", "a cup", "a cap"], "gold": i % 4,
               "seconds": [30, 300, 3000][i % 3]}
        letter = next((c for c in reply.split() if c in "ABCD"), "")
        lines.append({"doc_id": i, "doc": doc, "target": str(i % 4), "filtered_resps": [reply],
                      "clipqa_score": {"correct": int(letter == "ABCD"[i % 4])}})
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return path


def test_a_mapped_benchmark_imports_without_code(tmp_path: Path, run_cli) -> None:  # noqa: ANN001
    (tmp_path / "clipqa.yaml").write_text(MAP)
    replies = [f"It is {'ABCD'[(i * 7) % 4]}" for i in range(12)]
    samples = _samples(tmp_path / "20260101_000000_samples_clipqa.jsonl", replies)
    ws = tmp_path / "ws"
    code, out, err = run_cli("import", "lmms-eval", "--samples", str(samples), "--map",
                             str(tmp_path / "clipqa.yaml"), "--run-id", "base",
                             "--workspace", str(ws))
    assert code == 0, err
    assert "wrote questions/clipqa.json" in out and "names no task_type" in out
    loaded = load_config(ws / "video_split.yaml")
    vs = loaded.config.video_split
    assert (vs.letter_rule, vs.difficulty_field) == ("perceptiontest", "seconds")
    assert vs.difficulty_levels == ["short", "medium", "long"]
    inputs = Inputs(loaded)
    by_id = {q.question_id: q for q in inputs.benchmark.questions}
    assert [by_id[f"c{i:03d}"].difficulty for i in range(3)] == ["short", "medium", "long"]
    assert {q.task_type for q in by_id.values()} == {"clipqa"}
    for p in inputs.predictions:
        i = int(p.question_id[1:])
        assert p.correct == ("ABCD"[(i * 7) % 4] == "ABCD"[i % 4])
    other = _samples(tmp_path / "20260102_000000_samples_clipqa.jsonl", ["B"] * 12)
    code, out, err = run_cli("import", "lmms-eval", "--samples", str(other), "--map",
                             str(tmp_path / "clipqa.yaml"), "--run-id", "ref",
                             "--workspace", str(ws))
    assert code == 0 and "added ref to diag.reference_runs" in out, err


def test_a_broken_map_is_one_line(tmp_path: Path, run_cli) -> None:  # noqa: ANN001
    bad = tmp_path / "bad.yaml"
    bad.write_text(MAP.replace("answer_is: index", "answer_is: position"))
    samples = _samples(tmp_path / "20260101_000000_samples_clipqa.jsonl", ["A"] * 3)
    code, out, err = run_cli("import", "lmms-eval", "--samples", str(samples), "--map",
                             str(bad), "--run-id", "r", "--workspace", str(tmp_path / "ws"))
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "fields.answer_is" in err and str(bad) in err
    assert not (tmp_path / "ws").exists()


@pytest.mark.parametrize(("keys", "said"), [
    ("difficulty_edges: [600, 60]", "strictly increasing"),
    ("difficulty_edges: [60]\n  difficulty_levels: [short]", "must name 2 distinct levels"),
    ("difficulty_levels: [a, b]", "needs difficulty_edges"),
    ("letter_rule: firstletter", "letter_rule"),
])
def test_difficulty_levels_and_letter_rule_are_checked(tmp_path: Path, keys: str,
                                                       said: str) -> None:
    config = tmp_path / "video_split.yaml"
    config.write_text(f"""video_split:
  baseline_run_id: b
  n_trainval: 3
  epsilon: 0.1
  report_floor: 1
  val_wrong_min: 0
  val_ratio: 0.3
  seed: 1
  floor_k: {{}}
  {keys}
diag: {{prompt_version: v1, model: m, judge: rules, context: answer_only}}
""")
    with pytest.raises(ConfigError) as caught:
        load_config(config)
    assert said in str(caught.value)


def test_the_letter_rule_is_part_of_the_fingerprint(tmp_path: Path, run_cli) -> None:  # noqa: ANN001
    """Which answers are wrong depends on the rule, so every verdict does: a workspace
    scored by another rule is another judge's partition (Video-MME's rule adds nothing)."""
    (tmp_path / "clipqa.yaml").write_text(MAP)
    samples = _samples(tmp_path / "20260101_000000_samples_clipqa.jsonl", ["It is B"] * 12)
    ws = tmp_path / "ws"
    assert run_cli("import", "lmms-eval", "--samples", str(samples), "--map",
                   str(tmp_path / "clipqa.yaml"), "--run-id", "base", "--workspace",
                   str(ws))[0] == 0
    config = ws / "video_split.yaml"
    code, out, _ = run_cli("fingerprint", "--config", str(config))
    assert code == 0 and "letter_rule=perceptiontest" in out
    config.write_text(config.read_text().replace("  letter_rule: perceptiontest\n", ""))
    code, out2, err = run_cli("fingerprint", "--config", str(config))
    assert code == 0, err
    assert out2.splitlines()[0] != out.splitlines()[0] and "letter_rule" not in out2
