"""``split-assets import``: published results in, a workspace that runs as written."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest
import yaml
from conftest import kv
from helpers.official_layout import answers, write_predictions, write_results

from split_assets.app.session import Session
from split_assets.diagnosis.cases import CaseSource
from split_assets.diagnosis.plan import wrong_to_diagnose
from split_assets.errors import UserError
from split_assets.importing.results_files import import_predictions, import_videomme
from split_assets.judge.base import JudgeCase
from split_assets.judge.rules import RulesJudge
from split_assets.settings import RulesJudgeConfig, load_config
from split_assets.store.signals import SignalRow, SignalStore


def _import(tmp_path: Path, run: str, n_videos: int = 30, **kw: object) -> Path:
    source = write_results(tmp_path / f"{run}.json", n_videos, run)
    import_videomme(source, run, tmp_path / "ws", **kw)
    return tmp_path / "ws"


def test_first_import_makes_a_workspace_later_ones_are_reference_runs(tmp_path: Path) -> None:
    ws = _import(tmp_path, "base")
    assert (ws / "questions" / "videomme.json").is_file()
    bench = json.loads((ws / "questions" / "videomme.json").read_text())
    assert "response" not in bench[0]["questions"][0]  # the benchmark holds no answers
    doc = yaml.safe_load((ws / "video_split.yaml").read_text())
    assert doc["video_split"]["baseline_run_id"] == "base"
    assert doc["video_split"]["floor_k"] == {} and doc["diag"]["context"] == "answer_only"
    _import(tmp_path, "ref1")
    _import(tmp_path, "ref2")
    doc = yaml.safe_load((ws / "video_split.yaml").read_text())
    assert doc["diag"]["reference_runs"] == ["ref1", "ref2"]
    rows = sqlite3.connect(ws / "harness.db").execute(
        "SELECT run_id, COUNT(*) FROM predictions GROUP BY run_id ORDER BY 1").fetchall()
    assert rows == [("base", 90), ("ref1", 90), ("ref2", 90)]


def test_a_run_id_present_is_refused_unless_replace(tmp_path: Path) -> None:
    ws = _import(tmp_path, "base")
    _import(tmp_path, "ref1")
    with pytest.raises(UserError) as err:
        _import(tmp_path, "ref1")
    assert "run 'ref1' is already in" in err.value.line() and "--replace" in err.value.line()
    with SignalStore(ws / "signals.db") as store:  # ref1 diagnosed as a baseline once
        store.upsert(SignalRow(question_id="001-1", baseline_run_id="ref1",
                               diag_fingerprint="fp-x", video_id="001", task_type="OCR Problems",
                               tier="T1"))
        store.upsert(SignalRow(question_id="001-1", baseline_run_id="base",
                               diag_fingerprint="fp-x", video_id="001", task_type="OCR Problems",
                               tier="T1"))
    source = write_results(tmp_path / "ref1b.json", 30, "ref1", skill=0.2)
    summary = import_videomme(source, "ref1", ws, replace=True)
    assert any("deleted 1 signal row(s) of ref1" in line for line in summary.lines())
    conn = sqlite3.connect(ws / "signals.db")
    assert conn.execute("SELECT baseline_run_id FROM signals").fetchall() == [("base",)]
    assert sqlite3.connect(ws / "harness.db").execute(
        "SELECT COUNT(*) FROM predictions WHERE run_id = 'ref1'").fetchone()[0] == 90
    doc = yaml.safe_load((ws / "video_split.yaml").read_text())
    assert doc["diag"]["reference_runs"] == ["ref1"]  # listed once


def test_a_file_of_another_benchmark_is_refused_with_counts(tmp_path: Path) -> None:
    ws = _import(tmp_path, "base")
    bigger = write_results(tmp_path / "big.json", 32, "other")
    with pytest.raises(UserError) as err:
        import_videomme(bigger, "other", ws)
    assert "6 of 96 question ids are not in the workspace's benchmark (e.g. 031-1" in \
        err.value.line()
    smaller = write_results(tmp_path / "small.json", 25, "other")
    with pytest.raises(UserError) as err:
        import_videomme(smaller, "other", ws)
    assert "15 of 90 benchmark questions have no answer" in err.value.line()
    assert "--partial" in err.value.line()
    import_videomme(smaller, "other", ws, partial=True)
    assert "other" in yaml.safe_load((ws / "video_split.yaml").read_text())["diag"][
        "reference_runs"]
    # nothing was written by the refused imports
    assert sqlite3.connect(ws / "harness.db").execute(
        "SELECT COUNT(*) FROM predictions WHERE run_id = 'other'").fetchone()[0] == 75


def test_import_predictions_jsonl_with_roles(tmp_path: Path) -> None:
    ws = _import(tmp_path, "base")
    given = answers(30, "cand", skill=0.1)
    import_predictions(write_predictions(tmp_path / "c.jsonl", given), "cand", ws,
                       role="candidate")
    import_predictions(write_predictions(tmp_path / "r.jsonl", answers(30, "rerun")), "rerun",
                       ws, role="control")
    doc = yaml.safe_load((ws / "video_split.yaml").read_text())
    assert doc["evaluation"] == {"candidates": ["cand"], "control_run": "rerun",
                                 "test_looks_max": 5, "feedback_budget": 100}
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question_id": "001-1", "response": "A"}\n{"question_id": "zzz", '
                   '"response": "B"}\n')
    with pytest.raises(UserError) as err:
        import_predictions(bad, "bad", ws, partial=True)
    assert "1 of 2 question ids are not in the workspace's benchmark (e.g. zzz)" in \
        err.value.line()
    bad.write_text('{"question_id": "001-1", "response": "A"}\nnot json\n')
    with pytest.raises(UserError) as err:
        import_predictions(bad, "bad", ws, partial=True)
    assert "invalid JSON line" in err.value.line() and "bad.jsonl:2" in err.value.line()


def test_answer_only_rules_judge_uses_reference_runs(tmp_path: Path) -> None:
    ws = _import(tmp_path, "base", n_videos=60)
    _import(tmp_path, "ref1", n_videos=60)
    _import(tmp_path, "ref2", n_videos=60)
    inputs = Session.open(ws / "video_split.yaml").inputs
    wrong = wrong_to_diagnose(inputs.predictions)
    cases = CaseSource(inputs, wrong).cases(wrong)
    assert all(len(c.reference_wrong) == 2 for c in cases)
    params = RulesJudgeConfig()
    for needed in (1, 2):
        judge = RulesJudge(params, "answer_only", ("ref1", "ref2"), needed)
        for case in cases:
            tier = judge.decide(case).tier
            assert tier == ("T2" if sum(w is True for w in case.reference_wrong) >= needed
                            else "T1")
    tiers_all = [RulesJudge(params, "answer_only", ("ref1", "ref2"), 2).decide(c).tier
                 for c in cases]
    assert 0 < tiers_all.count("T2") < len(cases)  # hard questions persist, lapses do not
    alone = RulesJudge(params, "answer_only").decide(cases[0])
    assert alone.tier == "T1" and "No reference runs" in alone.rationale
    case = cases[0]
    missing = JudgeCase(case.question, case.prediction, reference_wrong=(None, True))
    assert RulesJudge(params, "answer_only", ("ref1", "ref2"), 2).decide(missing).tier == "T1"


def test_reference_runs_and_min_agree_change_the_fingerprint(tmp_path: Path,
                                                             run_cli) -> None:  # noqa: ANN001
    ws = _import(tmp_path, "base")
    _import(tmp_path, "ref1")
    _import(tmp_path, "ref2")
    config = ws / "video_split.yaml"

    def fp() -> str:
        code, out, err = run_cli("fingerprint", "--config", str(config))
        assert code == 0, err
        return out.splitlines()[0]

    both = fp()
    doc = yaml.safe_load(config.read_text())
    doc["diag"]["min_agree"] = 1
    config.write_text(yaml.safe_dump(doc))
    one = fp()
    # a replaced reference run (other answers) is another judge
    import_videomme(write_results(tmp_path / "r2.json", 30, "ref2", skill=0.3), "ref2", ws,
                    replace=True)
    replaced = fp()
    assert len({both, one, replaced}) == 3


def test_import_then_run_from_the_cli(tmp_path: Path, run_cli) -> None:  # noqa: ANN001
    """The acceptance path at Video-MME size: 2,700 questions plus one reference run."""
    base = write_results(tmp_path / "base.json", 900, "base")
    ref = write_results(tmp_path / "ref.json", 900, "ref")
    ws = tmp_path / "ws"
    code, out, err = run_cli("import", "videomme", "--results", str(base), "--run-id", "base",
                             "--workspace", str(ws))
    assert code == 0, err
    assert "2700 answers to 2700 questions" in out
    code, out, err = run_cli("import", "videomme", "--results", str(ref), "--run-id", "ref",
                             "--workspace", str(ws))
    assert code == 0, err
    code, _, err = run_cli("import", "videomme", "--results", str(ref), "--run-id", "ref",
                           "--workspace", str(ws))
    assert code == 2 and err.count("error: ") == 1 and "--replace" in err
    code, out, err = run_cli("run", "--config", str(ws / "video_split.yaml"))
    assert code == 0, err
    pools = kv(out)["pools"]
    code, out, err = run_cli("verify", pools, "--config", str(ws / "video_split.yaml"))
    checks = out.splitlines()  # the six invariants and whatever verify re-derives besides
    assert code == 0 and len(checks) >= 6 and all(c.startswith("ok ") for c in checks), out + err
    manifest = json.loads(Path(pools).with_name("split_manifest.json").read_text())
    tiers = manifest["tier_counts"]
    assert all(tiers[pool].get("T2", 0) > 0 for pool in tiers)  # persistent defects found
    assert abs(manifest["baseline_accuracy"]["test_minus_global"]) < 0.005


def test_replace_is_refused_while_the_signal_store_is_locked(tmp_path: Path) -> None:
    ws = _import(tmp_path, "base")
    with SignalStore(ws / "signals.db") as store:
        store.upsert(SignalRow(question_id="001-1", baseline_run_id="base",
                               diag_fingerprint="fp-x", video_id="001", task_type="OCR Problems",
                               tier="T1"))
    before = (ws / "harness.db").read_bytes()
    lock = sqlite3.connect(ws / "signals.db")
    lock.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(UserError) as err:
            import_videomme(write_results(tmp_path / "b2.json", 30, "base", skill=0.2), "base",
                            ws, replace=True)
    finally:
        lock.rollback()
        lock.close()
    assert "could not delete the signals of run 'base'" in err.value.line()
    assert "nothing was changed" in err.value.line()
    assert (ws / "harness.db").read_bytes() == before  # stale diagnoses never meet new answers


def test_questions_without_a_response_are_missing_answers(tmp_path: Path) -> None:
    source = write_results(tmp_path / "base.json", 30, "base")
    videos = json.loads(source.read_text())
    for video in videos[:2]:
        for q in video["questions"]:
            del q["response"]
    source.write_text(json.dumps(videos))
    with pytest.raises(UserError) as err:
        import_videomme(source, "base", tmp_path / "ws")
    assert "6 of 90 benchmark questions have no answer" in err.value.line()
    assert not (tmp_path / "ws").exists()
    summary = import_videomme(source, "base", tmp_path / "ws", partial=True)
    assert "84 answers to 90 questions" in summary.lines()[0]
    for video in videos:
        for q in video["questions"]:
            q.pop("response", None)
    source.write_text(json.dumps(videos))
    with pytest.raises(UserError, match="none of the 90 questions has a response"):
        import_videomme(source, "other", tmp_path / "ws2")


def test_jsonl_results_bad_bytes_and_bad_run_ids(tmp_path: Path) -> None:
    videos = json.loads(write_results(tmp_path / "base.json", 30, "base").read_text())
    flat = tmp_path / "flat.jsonl"
    flat.write_text("".join(json.dumps(dict({k: v[k] for k in ("video_id", "duration",
                                                                 "domain", "sub_category")},
                                            **q)) + "\n"
                            for v in videos for q in v["questions"]))
    summary = import_videomme(flat, "base", tmp_path / "ws")
    assert "90 answers to 90 questions" in summary.lines()[0]
    assert len(json.loads((tmp_path / "ws" / "questions" / "videomme.json").read_text())) == 90
    latin = tmp_path / "latin.json"
    latin.write_bytes(b'[{"video_id": "caf\xe9"}]')
    with pytest.raises(UserError, match="not UTF-8"):
        import_videomme(latin, "x", tmp_path / "ws3")
    with pytest.raises(UserError, match="control characters"):
        import_videomme(flat, "a\nb", tmp_path / "ws4")


def test_a_workspace_that_is_a_file_is_refused(tmp_path: Path, run_cli) -> None:  # noqa: ANN001
    results = write_results(tmp_path / "base.json", 30, "base")
    jsonl = write_predictions(tmp_path / "p.jsonl", answers(30, "p"))
    not_a_folder = tmp_path / "ws.txt"
    not_a_folder.write_text("notes\n")
    for argv in (("videomme", "--results", str(results)), ("predictions", "--jsonl", str(jsonl))):
        code, _, err = run_cli("import", *argv, "--run-id", "base", "--workspace",
                               str(not_a_folder))
        assert code == 2 and err.count("error: ") == 1 and "Traceback" not in err
        assert f"the workspace {not_a_folder} is a file, not a folder (--workspace)" in err
    assert not_a_folder.read_text() == "notes\n"


def test_an_import_keeps_the_users_comments_and_layout(tmp_path: Path) -> None:
    ws = _import(tmp_path, "base")
    config = ws / "video_split.yaml"
    text = config.read_text()
    text = text.replace("  seed: 7\n", "  seed: 7            # fixed for the paper\n")
    text = text.replace("evaluation:\n", "# candidates of the 2026-02 evolution round\n"
                                         "evaluation:\n")
    text = text.replace("  model: rules-v1\n", "  model: 'rules-v1'\n")  # the user's quotes
    text += "# end of my notes\n"
    config.write_text(text)
    import_predictions(write_predictions(tmp_path / "c.jsonl", answers(30, "cand")), "cand", ws,
                       role="candidate")
    import_predictions(write_predictions(tmp_path / "r.jsonl", answers(30, "rerun")), "rerun",
                       ws, role="control")
    _import(tmp_path, "ref1")
    after = config.read_text()
    for kept in ("  seed: 7            # fixed for the paper\n",
                 "# candidates of the 2026-02 evolution round\nevaluation:\n",
                 "  model: 'rules-v1'\n", "# end of my notes\n",
                 "# written by 'split-assets import'"):
        assert kept in after
    assert "  candidates: [cand]\n  control_run: rerun\n" in after
    assert "  reference_runs: [ref1] # other models' runs" in after
    # nothing else moved: the file is the user's, line for line, plus the three runs (the
    # reference in both its lists, their comments kept)
    changed = [line.split(" #")[0].rstrip() for line in after.splitlines()
               if line not in text.splitlines()]
    assert changed == ["  balance_runs: [ref1]", "  reference_runs: [ref1]",
                       "  candidates: [cand]", "  control_run: rerun"]
    loaded = load_config(config).config
    assert loaded.evaluation.candidates == ["cand"] and loaded.diag.reference_runs == ["ref1"]


def test_an_import_appends_to_the_users_block_list(tmp_path: Path) -> None:
    """A hand-written config (sequences indented under their key, comments on items, a
    run id YAML 1.1 would read as a bool) keeps its shape when a run is added."""
    ws = _import(tmp_path, "base")
    config = ws / "video_split.yaml"
    text = re.sub(r"  reference_runs: \[\].*\n",
                  "  reference_runs:\n    - ref-a     # the January run\n    - 'on'\n",
                  config.read_text())
    config.write_text(text)
    import_predictions(write_predictions(tmp_path / "r.jsonl", answers(30, "ref-b")), "ref-b",
                       ws, role="reference")
    import_predictions(write_predictions(tmp_path / "y.jsonl", answers(30, "yes")), "yes",
                       ws, role="candidate")
    after = config.read_text()
    assert "  reference_runs:\n    - ref-a     # the January run\n    - 'on'\n    - ref-b\n" \
        in after
    assert "  candidates: ['yes']\n" in after  # quoted: the config loader must read a string
    assert yaml.safe_load(after)["diag"]["reference_runs"] == ["ref-a", "on", "ref-b"]


def test_a_broken_config_is_refused_before_the_run_is_written(tmp_path: Path) -> None:
    ws = _import(tmp_path, "base")
    config = ws / "video_split.yaml"
    config.write_text(config.read_text() + "diag:\n  judge: rules\n")  # a second 'diag'
    before = (ws / "harness.db").read_bytes()
    with pytest.raises(UserError) as err:
        import_predictions(write_predictions(tmp_path / "c.jsonl", answers(30, "cand")),
                           "cand", ws, role="candidate")
    assert "duplicate key" in err.value.line() and str(config) in err.value.line()
    assert (ws / "harness.db").read_bytes() == before


def test_an_import_writes_the_users_yaml_1_1_words_back_as_they_were(tmp_path: Path) -> None:
    """`json_mode: yes` is a boolean to the config loader (YAML 1.1): the round trip must not
    turn it into the string 'yes' (which strict types would then refuse)."""
    from split_assets.settings import load_config

    ws = _import(tmp_path, "base")
    config = ws / "video_split.yaml"
    text = config.read_text(encoding="utf-8")
    config.write_text(text.replace("diag:\n", "diag:\n  openai:\n    json_mode: yes\n"
                                   "    stream: off\n", 1), encoding="utf-8")
    source = write_results(tmp_path / "on.json", 30, "on")
    import_videomme(source, "on", ws)  # a run id PyYAML would read as a boolean
    after = config.read_text(encoding="utf-8")
    assert "json_mode: yes" in after and "stream: off" in after
    assert "- 'on'" in after or "['on']" in after
    loaded = load_config(config).config
    assert loaded.diag.openai.response_format == "json_object"  # json_mode: yes, read as true
    assert loaded.diag.openai.stream is False
    assert loaded.diag.reference_runs == ["on"]
