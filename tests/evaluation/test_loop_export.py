"""A frozen pool as rows for an evolution loop: ``export jsonl|hf`` (the hf folder read back
with ``datasets``), never test; and answers held in memory submitted to the Ladder without a
file (``split_assets.api.feedback_answers``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.official_layout import answers

from split_assets.evaluation.comparison import load_pools
from split_assets.settings import load_config
from split_assets.workspace.partition import Partition


def _partition(config: Path) -> Partition:
    from split_assets.app.session import Session

    return Session.open(config).partition


def _pools(config: Path) -> dict:
    return load_pools(_partition(config))


def test_hf_export_loads_back_as_the_pools(evaluated: Path, run_cli, tmp_path: Path,  # noqa: ANN001
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import datasets

    out = tmp_path / "hf"
    code, stdout, err = run_cli("export", "hf", "--pool", "trainval", "--out", str(out),
                                "--config", str(evaluated))
    assert code == 0, err
    assert "forbid redistributing" in err
    loaded = datasets.load_dataset("parquet", data_dir=str(out),
                                   cache_dir=str(tmp_path / "hf_cache"))
    assert isinstance(loaded, datasets.DatasetDict) and set(loaded) == {"train", "validation"}
    pools = _pools(evaluated)
    for name in ("train", "validation"):
        assert loaded[name]["question_id"] == pools["pools"][name]  # exactly, in order
        assert set(loaded[name]["pool"]) == {name}
    train = loaded["train"]
    wrong = [r for r in train if not r["baseline_correct"]]
    assert wrong and all(r["diagnosis"] is not None and r["diagnosis"]["tier"] in
                         ("T0", "T1", "T2") for r in wrong)
    assert all(r["diagnosis"] is None for r in train if r["baseline_correct"])
    assert set(loaded["validation"]["diagnosis"]) == {None}  # diagnoses of train only
    first = train[0]
    assert first["question"] and len(first["options"]) == 4 and first["answer"] in "ABCD"
    card = (out / "README.md").read_text(encoding="utf-8")
    manifest = _partition(evaluated).frozen_manifest()
    for fact in (manifest["pools_sha256"], manifest["split_id"], manifest["diag_fingerprint"],
                 "base", "videomme", "forbid redistributing"):
        assert fact in card
    code, _, err = run_cli("export", "hf", "--pool", "train", "--out", str(out), "--config",
                           str(evaluated))
    assert code == 2 and "not empty" in err  # never mixes two exports


def test_jsonl_export_and_test_is_never_exported(evaluated: Path, run_cli,  # noqa: ANN001
                                                 tmp_path: Path) -> None:
    out = tmp_path / "train.jsonl"
    code, _, err = run_cli("export", "jsonl", "--pool", "train", "--out", str(out),
                           "--config", str(evaluated))
    assert code == 0, err
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r["question_id"] for r in rows] == _pools(evaluated)["pools"]["train"]
    assert {"question", "options", "answer", "baseline_response", "baseline_correct",
            "diagnosis", "video_id", "task_type"} <= set(rows[0])
    for kind in ("jsonl", "hf"):
        code, _, err = run_cli("export", kind, "--pool", "test", "--out",
                               str(tmp_path / f"test.{kind}"), "--config", str(evaluated))
        assert code == 2 and "test is never exported" in err and len(err.splitlines()) == 1
        assert not (tmp_path / f"test.{kind}").exists()


def test_answers_in_memory_get_the_ladder_s_feedback(evaluated: Path, run_cli) -> None:  # noqa: ANN001
    from split_assets.api import feedback, feedback_answers

    validation = _pools(evaluated)["pools"]["validation"]
    given = answers(900, "rerun1")
    result = feedback_answers("loop-1", {q: given[q] for q in validation}, evaluated)
    assert (result["moved"], result["submissions"]) == (True, 1)
    # the same as importing a file of those answers and calling feedback on the run
    again = feedback("loop-1", evaluated)
    assert again["repeat"] and again["leaderboard_accuracy"] == result["leaderboard_accuracy"]
    loaded = load_config(evaluated)
    assert "loop-1" in loaded.config.evaluation.candidates
    test_q = _pools(evaluated)["pools"]["test"][0]
    from split_assets.errors import SplitAssetsError

    with pytest.raises(SplitAssetsError):  # a test answer is a look: refused without a spend
        feedback_answers("loop-2", {test_q: "A"}, evaluated)
