"""The test pool stays sealed for the whole research loop (issue 35): what the harness showed
is a look (an import answering test questions), a look belongs to the baseline and not to one
split (seed shopping refused, or the new split inherits the look), the freeze locks the
references, and the loop's small holes are closed. Every refusal is one line, exit 2, and
writes nothing."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from conftest import edit_config, kv
from helpers.evaluated import N_VIDEOS
from helpers.official_layout import answers, write_predictions
from helpers.refusals import refused


def _state(ws: Path) -> dict[str, str]:
    """Digests of what an import or a run may write (nothing, when refused)."""
    files = [ws / "harness.db", ws / "video_split.yaml", ws / "signals.db",
             *sorted(ws.glob("splits/*/*/*.json"))]
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in files if p.is_file()}


def _import(run_cli, config: Path, tmp_path: Path, run: str, given: dict[str, str],  # noqa: ANN001
            *flags: str) -> tuple[int, str, str]:
    return run_cli("import", "predictions", "--jsonl",
                   str(write_predictions(tmp_path / f"{run}.jsonl", given)), "--run-id", run,
                   "--workspace", str(config.parent), *flags)


def _pools(config: Path) -> dict:
    return json.loads(next(config.parent.glob("splits/*/*/pools.json")).read_text())


def _ledger(run_cli, config: Path, *flags: str) -> list[dict]:  # noqa: ANN001
    code, out, err = run_cli("ledger", "--config", str(config), "--json", *flags)
    assert code == 0, err
    return json.loads(out)


def test_the_freeze_locks_the_references(evaluated: Path, run_cli,  # noqa: ANN001
                                         tmp_path: Path) -> None:
    ws, given = evaluated.parent, answers(N_VIDEOS, "cand", skill=0.05)
    before = _state(ws)
    refused(_import(run_cli, evaluated, tmp_path, "cand", given), "--role",
             "is frozen", "candidate", "control", "reference")
    assert _state(ws) == before
    # before any look at test, another model's run may still be added (a new split follows)
    code, out, err = _import(run_cli, evaluated, tmp_path, "ref2", answers(N_VIDEOS, "ref2"),
                             "--role", "reference")
    assert code == 0 and "added ref2 to diag.reference_runs" in out, err
    # back to the frozen split (the import listed ref2 in both reference lists)
    edit_config(evaluated, diag={"reference_runs": _references(evaluated)},
                video_split={"balance_runs": _references(evaluated)})
    assert run_cli("compare", "--config", str(evaluated), "--candidate", "rerun1", "--pool",
                   "test")[0] == 0
    before = _state(ws)
    refused(_import(run_cli, evaluated, tmp_path, "ref3", answers(N_VIDEOS, "ref3"),
                     "--role", "reference"), "reference run refused", "looked at",
             "--refreeze-after-test-look")
    assert _state(ws) == before


def _references(config: Path) -> list[str]:
    """The reference runs the evaluated workspace was frozen with."""
    frozen = json.loads(next(config.parent.glob("splits/*/*/split_manifest.json")).read_text())
    return frozen["config"]["diag"]["reference_runs"]


def test_a_reference_after_a_look_through_the_refreeze_path(evaluated: Path, run_cli,  # noqa: ANN001
                                                            tmp_path: Path) -> None:
    """After a look, a new reference is accepted with --refreeze-after-test-look; the next run
    needs the flag too and freezes a new split whose ledger holds the earlier look."""
    ws = evaluated.parent
    assert run_cli("compare", "--config", str(evaluated), "--candidate", "rerun1", "--pool",
                   "test")[0] == 0
    code, out, err = _import(run_cli, evaluated, tmp_path, "ref9", answers(N_VIDEOS, "ref9"),
                             "--role", "reference", "--refreeze-after-test-look")
    assert code == 0, err
    assert "the next split-assets run needs --refreeze-after-test-look" in out
    before = _state(ws)
    refused(run_cli("run", "--config", str(evaluated)), "a new split refused",
             "--refreeze-after-test-look")
    assert _state(ws) == before
    code, out, err = run_cli("run", "--config", str(evaluated), "--refreeze-after-test-look")
    assert code == 0, err
    new_split = kv(out)["split_id"]
    assert new_split != _pools_of(ws, exclude=new_split)["split_id"]
    inherited = [row for row in _ledger(run_cli, evaluated) if row["pool"] == "test"]
    assert [row["run_id"] for row in inherited] == ["rerun1"]
    assert inherited[0]["statistic"]["inherited"]["split_id"] != new_split


def _pools_of(ws: Path, exclude: str) -> dict:
    return next(d for d in (json.loads(p.read_text()) for p in ws.glob("splits/*/*/pools.json"))
                if d["split_id"] != exclude)


def test_a_former_candidate_is_refused_as_a_reference(evaluated: Path, run_cli,  # noqa: ANN001
                                                      tmp_path: Path) -> None:
    """A candidate's answers never become labels, whatever the flag: by its listing, by a look
    made with it, or by the same answers under another id."""
    ws, given = evaluated.parent, answers(N_VIDEOS, "cand", skill=0.05)
    code, out, err = _import(run_cli, evaluated, tmp_path, "cand", given, "--role", "candidate")
    assert code == 0 and "test look 1 of 5 (import of cand:" in err, err
    before = _state(ws)
    refused(_import(run_cli, evaluated, tmp_path, "cand", given, "--role", "reference",
                     "--refreeze-after-test-look", "--replace"),
             "is a candidate (evaluation.candidates)", "launder", "--role candidate")
    refused(_import(run_cli, evaluated, tmp_path, "cand-as-ref", given, "--role",
                     "reference", "--refreeze-after-test-look"),
             "its answers are those of 'cand', which was a look at test", "launder")
    assert _state(ws) == before
    # a candidate seen only through validation (no look), under another id: refused too
    validation = set(_pools(evaluated)["pools"]["validation"])
    partial = {q: a for q, a in answers(N_VIDEOS, "candv", skill=0.05).items()
               if q in validation}
    assert _import(run_cli, evaluated, tmp_path, "candv", partial, "--role", "candidate",
                   "--partial")[0] == 0
    before = _state(ws)
    refused(_import(run_cli, evaluated, tmp_path, "candv-copy", partial, "--role", "reference",
                    "--partial", "--refreeze-after-test-look"),
            "its answers are those of 'candv', a candidate or the control run")
    assert _state(ws) == before
    edit_config(evaluated, evaluation={"candidates": []})
    before = _state(ws)
    refused(_import(run_cli, evaluated, tmp_path, "cand", given, "--role", "reference",
                     "--refreeze-after-test-look", "--replace"),
             "run 'cand' was itself a look at test")
    assert _state(ws) == before


def test_a_full_benchmark_candidate_import_is_a_test_look_within_the_budget(
        evaluated: Path, run_cli, tmp_path: Path) -> None:  # noqa: ANN001
    edit_config(evaluated, evaluation={"test_looks_max": 1})
    code, out, err = _import(run_cli, evaluated, tmp_path, "cand1",
                             answers(N_VIDEOS, "cand1", skill=0.05), "--role", "candidate")
    assert code == 0, err
    # said on stderr, where it happens: which look of the budget this import spent
    assert err.strip() == ("test look 1 of 1 (import of cand1: 900 test questions answered; "
                           "the harness printed an aggregate over them)")
    assert "test look" not in out
    (row,) = _ledger(run_cli, evaluated)
    assert (row["pool"], row["source"], row["run_id"]) == ("test", "import", "cand1")
    assert row["statistic"]["answered"] == row["statistic"]["of"] == 900
    # comparing it on test later is a repeat of that look, not a second one
    code, out, err = run_cli("compare", "--config", str(evaluated), "--candidate", "cand1",
                             "--pool", "test")
    assert code == 0 and "(a repeat" in err and "test look 1 of budget 1" in out
    before = _state(evaluated.parent)
    refused(_import(run_cli, evaluated, tmp_path, "cand2",
                     answers(N_VIDEOS, "cand2", skill=0.05), "--role", "candidate"),
             "import refused", "evaluation.test_looks_max 1 are spent", "--spend-test-look",
             "export lmms-eval --pool validation")
    assert _state(evaluated.parent) == before
    code, out, err = _import(run_cli, evaluated, tmp_path, "cand2",
                             answers(N_VIDEOS, "cand2", skill=0.05), "--role", "candidate",
                             "--spend-test-look")
    assert code == 0 and err.startswith("test look 2 beyond the budget of 1 (import of cand2:"), err


def test_a_validation_only_candidate_records_no_look(evaluated: Path, run_cli,  # noqa: ANN001
                                                     tmp_path: Path) -> None:
    edit_config(evaluated, evaluation={"test_looks_max": 1})
    validation = set(_pools(evaluated)["pools"]["validation"])
    given = {q: r for q, r in answers(N_VIDEOS, "cand", skill=0.05).items() if q in validation}
    code, out, err = _import(run_cli, evaluated, tmp_path, "cand", given, "--role",
                             "candidate", "--partial")
    assert code == 0 and "answers no test question" in out and "no look" in out, err
    assert _ledger(run_cli, evaluated) == []
    code, out, err = run_cli("feedback", "--config", str(evaluated), "--candidate", "cand")
    assert code == 0 and "repeat=false" in out, err


def test_seed_shopping_after_a_test_look(evaluated: Path, run_cli) -> None:  # noqa: ANN001
    """After a look at test, a new seed is refused before anything is paid; with
    --refreeze-after-test-look the new split's ledger starts with the earlier look and its
    manifest says how many of its test videos that look had shown."""
    code, out, err = run_cli("compare", "--config", str(evaluated), "--candidate", "rerun1",
                             "--pool", "test")
    assert code == 0, err
    first = _ledger(run_cli, evaluated)
    old_split = first[0]["split_id"]
    edit_config(evaluated, video_split={"seed": 8})
    before = _state(evaluated.parent)
    refused(run_cli("run", "--config", str(evaluated)), "a new split", old_split,
             "--refreeze-after-test-look")
    assert _state(evaluated.parent) == before
    code, out, err = run_cli("run", "--config", str(evaluated), "--refreeze-after-test-look")
    assert code == 0, err
    new_split = kv(out)["split_id"]
    assert new_split != old_split and "test_looks_max=5" in out and "feedback_budget=100" in out
    manifest = json.loads(Path(kv(out)["manifest"]).read_text())
    exposure = manifest["test_exposure"]
    old_test = {q.split("-")[0] for q in json.loads(
        next(p for p in evaluated.parent.glob("splits/*/*/pools.json")
             if p.parent.name == old_split).read_text())["pools"]["test"]}
    new_test = set(json.loads(Path(kv(out)["pools"]).read_text())["videos"]["test"])
    assert exposure["earlier_looks"] == 1 and exposure["earlier_splits"] == [old_split]
    assert exposure["test_videos_seen"] == len(old_test & new_test) > 0
    assert exposure["test_videos"] == len(new_test)
    rows = _ledger(run_cli, evaluated, "--pool", "test")
    inherited = [r for r in rows if r["split_id"] == new_split]
    assert [(r["run_id"], r["answers_digest"]) for r in inherited] == [
        ("rerun1", first[0]["answers_digest"])]
    assert inherited[0]["statistic"]["inherited"]["split_id"] == old_split
    # across splits, each look once: the earlier one as the row copied into the new split
    assert [(r["split_id"], r["run_id"]) for r in rows] == [(new_split, "rerun1")]
    # the inherited look shares the new split's budget: a budget of 1 is spent already
    edit_config(evaluated, evaluation={"test_looks_max": 1})
    refused(run_cli("compare", "--config", str(evaluated), "--candidate", "rerun2",
                     "--pool", "test"), "are spent")
    # two frozen splits now: a candidate import is one look (on the config's split), shown
    # once by `ledger`, and the old split inherits it when its budget is next consulted
    edit_config(evaluated, evaluation={"test_looks_max": 3})
    code, out, err = run_cli("import", "predictions", "--jsonl", str(write_predictions(
        evaluated.parent / "c.jsonl", answers(N_VIDEOS, "c", skill=0.05))), "--run-id", "c",
        "--workspace", str(evaluated.parent), "--role", "candidate")
    assert code == 0 and err.count("test look 2 of 3 (import of c: 900 test") == 1, err
    rows = _ledger(run_cli, evaluated, "--pool", "test")
    assert [r["run_id"] for r in rows] == ["rerun1", "c"]
    edit_config(evaluated, video_split={"seed": 7})  # back to the first split
    assert run_cli("compare", "--config", str(evaluated), "--candidate", "rerun1",
                   "--pool", "test")[0] == 0  # a repeat there: budget 3, looks rerun1 and c
    old_rows = [r for r in _ledger(run_cli, evaluated, "--pool", "test")
                if r["split_id"] == old_split]
    assert [(r["run_id"], r["is_repeat"]) for r in old_rows] == [
        ("rerun1", False), ("c", False), ("rerun1", True)]


def test_small_holes_of_the_loop(evaluated: Path, run_cli) -> None:  # noqa: ANN001
    edit_config(evaluated, evaluation={"control_run": "rerun2"})
    before = _state(evaluated.parent)
    refused(run_cli("feedback", "--config", str(evaluated), "--candidate", "base"),
             "the candidate run is the baseline itself")
    refused(run_cli("feedback", "--config", str(evaluated), "--candidate", "rerun2"),
             "the candidate run is the control itself")
    refused(run_cli("compare", "--config", str(evaluated), "--candidate", "rerun1",
                     "--spend-test-look"), "--spend-test-look without --pool test")
    assert _state(evaluated.parent) == before
    # one repeat rule, printed and stored alike: validation answers compare showed before
    assert run_cli("compare", "--config", str(evaluated), "--candidate", "rerun1")[0] == 0
    code, out, err = run_cli("feedback", "--config", str(evaluated), "--candidate", "rerun1")
    assert code == 0 and "repeat=true" in out, err
    assert _ledger(run_cli, evaluated)[-1]["is_repeat"] is True


def test_references_too_close_to_the_baseline_warn(evaluated: Path, run_cli) -> None:  # noqa: ANN001
    """A reference that is a copy of the baseline cannot tell T1 from T2: the run warns on the
    CLI and the check has Dagster's WARN severity; the power figures say why the discordance
    was assumed."""
    from dagster import AssetCheckKey, AssetCheckSeverity, AssetKey, DagsterInstance

    edit_config(evaluated, diag={"reference_runs": ["same"]})
    code, out, err = run_cli("run", "--config", str(evaluated))
    assert code == 0, err
    assert ("warning: check reference_runs_informative: split" in err
            and "same (0 of 2700 answers differ)" in err), err
    key = AssetCheckKey(AssetKey("frozen_pools"), "reference_runs_informative")
    latest = DagsterInstance.get().event_log_storage.get_latest_asset_check_execution_by_key(
        [key])
    evaluation = latest[key].event.dagster_event.event_specific_data
    assert not evaluation.passed and evaluation.severity == AssetCheckSeverity.WARN
    power = json.loads(Path(kv(out)["manifest"]).read_text())["power"]["test"]
    assert "agree with the baseline on every answer of this pool" in power["discordance_source"]


class _Dataset:
    """What a pool task's process_docs is handed: rows, and ``filter`` as in HF datasets."""

    def __init__(self, rows: list[dict]) -> None:
        self.rows = rows

    def filter(self, keep, with_indices: bool = False) -> _Dataset:  # noqa: ANN001
        return _Dataset([r for i, r in enumerate(self.rows)
                         if (keep(r, i) if with_indices else keep(r))])

    def __len__(self) -> int:
        return len(self.rows)


def _module(path: Path):  # noqa: ANN202
    import importlib.util

    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_export_lmms_eval_pools_and_test_as_a_look(evaluated: Path, run_cli) -> None:  # noqa: ANN001
    """The validation task keeps exactly its pool (and names no other question); exporting
    test is a look at test within the budget; a dataset of another release is refused."""
    import pytest

    edit_config(evaluated, evaluation={"test_looks_max": 1})
    doc = _pools(evaluated)
    code, out, err = run_cli("export", "lmms-eval", "--pool", "validation", "--config",
                             str(evaluated))
    assert code == 0, err
    name = f"videomme_{doc['split_id']}_validation"
    folder = evaluated.parent / "splits" / "lmms_eval_tasks" / name
    assert f"wrote the lmms-eval task {name} (540 validation questions" in out
    assert sorted(p.name for p in folder.iterdir()) == [f"{name}.{x}" for x in ("json", "py",
                                                                                "yaml")]
    assert json.loads((folder / f"{name}.json").read_text())["question_ids"] == \
        doc["pools"]["validation"]
    text = "\n".join(p.read_text() for p in folder.iterdir())
    assert not [q for q in doc["pools"]["test"] + doc["pools"]["train"] if f'"{q}"' in text]
    yaml_text = (folder / f"{name}.yaml").read_text()
    assert f"group: {name}" in yaml_text and "- task: videomme" in yaml_text
    assert f"process_docs: !function {name}.keep" in yaml_text
    rows = [{"question_id": q} for q in sorted(doc["correctness"])]
    kept = _module(folder / f"{name}.py").keep(_Dataset(rows))
    assert [r["question_id"] for r in kept.rows] == doc["pools"]["validation"]
    with pytest.raises(ValueError, match="not the release the split was made from"):
        _module(folder / f"{name}.py").keep(_Dataset(  # a release without one of its questions
            [r for r in rows if r["question_id"] != doc["pools"]["validation"][0]]))
    assert _ledger(run_cli, evaluated) == []  # validation: no look
    code, out, err = run_cli("export", "lmms-eval", "--pool", "validation", "--task",
                             "videomme_w_subtitle", "--config", str(evaluated), "--out",
                             str(evaluated.parent / "sub"))
    assert code == 0, err
    variant = f"videomme_w_subtitle_{doc['split_id']}_validation"
    assert "- task: videomme_w_subtitle\n" in (evaluated.parent / "sub" / variant /
                                              f"{variant}.yaml").read_text()
    refused(run_cli("export", "lmms-eval", "--pool", "validation", "--spend-test-look",
                     "--config", str(evaluated)), "--spend-test-look with --pool validation")
    refused(run_cli("export", "lmms-eval", "--pool", "validation", "--task", "mlvu_dev",
                     "--config", str(evaluated)), "--task mlvu_dev", "videomme_w_subtitle")

    code, out, err = run_cli("export", "lmms-eval", "--pool", "test", "--config",
                             str(evaluated), "--out", str(evaluated.parent / "t"))
    assert code == 0 and "ledger: test look (the test pool exported" in out, err
    assert [(r["pool"], r["source"]) for r in _ledger(run_cli, evaluated)] == [
        ("test", "export")]
    refused(run_cli("compare", "--config", str(evaluated), "--candidate", "rerun1", "--pool",
                     "test"), "are spent")
    # the same task again shows nothing new: a repeat, within the budget
    code, out, err = run_cli("export", "lmms-eval", "--pool", "test", "--config",
                             str(evaluated), "--out", str(evaluated.parent / "t2"))
    assert code == 0 and "(a repeat)" in out, err
    edit_config(evaluated, evaluation={"test_looks_max": 1}, video_split={"seed": 8})
    code, out, err = run_cli("run", "--config", str(evaluated), "--refreeze-after-test-look")
    assert code == 0, err  # a new split, whose test the export had partly shown: spent
    refused(run_cli("export", "lmms-eval", "--pool", "test", "--config", str(evaluated),
                     "--out", str(evaluated.parent / "t3")), "exporting test refused",
             "--spend-test-look")
    assert not (evaluated.parent / "t3").exists()


def test_an_index_numbered_benchmark_keeps_rows_by_place() -> None:
    """MVBench names a question by its subtask and place: one stock task per subtask, each
    keeping its places."""
    from split_assets.evaluation.harness_tasks import STOCK, _entries, _yaml

    entries = _entries(STOCK["mvbench"], ["action_sequence-00001", "action_sequence-00004",
                                          "fine_grained_pose-00000"])
    assert entries == [("mvbench_action_sequence", "keep_mvbench_action_sequence", [1, 4]),
                       ("mvbench_fine_grained_pose", "keep_mvbench_fine_grained_pose", [0])]
    text = _yaml("mvbench_x_validation", entries, "x", "validation", 3)
    assert "  - task: mvbench_fine_grained_pose\n    process_docs: !function " \
           "mvbench_x_validation.keep_mvbench_fine_grained_pose" in text


def test_escape_routes_are_closed(evaluated: Path, run_cli, tmp_path: Path) -> None:  # noqa: ANN001
    """A control's full-benchmark file is a look too (only its role tells it from a
    candidate); the baseline cannot be replaced after a look; a split folder moved away hides
    nothing from the import gate; a new judge after a look is refused before it is paid."""
    ws = evaluated.parent
    code, out, err = _import(run_cli, evaluated, tmp_path, "ctl", answers(N_VIDEOS, "ctl"),
                             "--role", "control")
    assert code == 0 and "(import of ctl: 900 test questions answered" in err, err
    refused(_import(run_cli, evaluated, tmp_path, "r2", answers(N_VIDEOS, "r2"), "--role",
                     "reference"), "reference run refused")
    refused(_import(run_cli, evaluated, tmp_path, "r2", answers(N_VIDEOS, "r2"), "--role",
                     "reference", "--spend-test-look"), "--spend-test-look with --role reference")
    before = _state(ws)
    refused(run_cli("import", "predictions", "--jsonl", str(write_predictions(
        tmp_path / "b.jsonl", answers(N_VIDEOS, "other"))), "--run-id", "base", "--workspace",
        str(ws), "--replace"), "replacing the baseline 'base' refused")
    assert _state(ws) == before
    (ws / "splits").rename(ws / "moved")  # the folder gone: the store still knows the split
    refused(_import(run_cli, evaluated, tmp_path, "c", answers(N_VIDEOS, "c")), "--role")
    code, out, err = _import(run_cli, evaluated, tmp_path, "c", answers(N_VIDEOS, "c"),
                             "--role", "candidate")
    assert code == 0 and "(import of c: " in err, err
    (ws / "moved").rename(ws / "splits")
    # another judge (a second reference) after a look: refused before any diagnosis is paid
    edit_config(evaluated, diag={"reference_runs": ["ref", "rerun2"]})
    before = _state(ws)
    refused(run_cli("run", "--config", str(evaluated)), "a new split refused",
             "--refreeze-after-test-look")
    assert _state(ws) == before
    # feedback says whether the Ladder saw new answers, beside the ledger's repeat
    edit_config(evaluated, diag={"reference_runs": ["ref"]})
    code, out, err = run_cli("feedback", "--config", str(evaluated), "--candidate", "rerun1")
    assert code == 0 and "repeat=false\nsubmitted=true\n" in out, err
    code, out, err = run_cli("feedback", "--config", str(evaluated), "--candidate", "rerun1")
    assert code == 0 and "repeat=true\nsubmitted=false\nsubmissions=1" in out, err
