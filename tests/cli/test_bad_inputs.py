"""Black-box battery: bad inputs and hostile environments through the ``split-assets`` entry point.

Every case runs the installed ``split-assets`` in a subprocess on a fresh copy of a small
generated workspace (or of the same workspace with a frozen split), with ``DAGSTER_HOME`` outside
it, and asserts the promise of docs/how-to/recover.md ("Errors and exit codes") and of issue 10:

* the exit code: 2 for anything the user must fix in config, input or environment (permissions,
  a full disk, a lock that does not clear), 1 for a run that failed otherwise, 130 for Ctrl-C;
* stderr's last line is ``error: <what> (<where>): <how to fix>`` and stderr has no traceback;
* nothing changed on disk except what the command documents: every file of the workspace is
  hashed before and after (path -> sha256, and the set of paths, folders included), and no
  ``-wal`` / ``-shm`` / ``-journal`` / ``.tmp`` file is left anywhere in it; a ``pools.json``
  never exists without its ``split_manifest.json`` (nor the other way round).

Adding a case: append one ``case(id, mutate, argv, exit, allowed)`` line to ``CASES``.
``mutate`` changes the workspace before the "before" hash (``helpers/bad_input_cases.py``:
``cfg``, ``cfg_text``, ``sql``, ``videos``, ``question``, ``write``, ``remove``, ``chain``);
``argv`` may use
``{ws}``, ``{cfg}``, ``{pools}`` (the frozen split's pools.json) and ``{scratch}`` (a folder
outside the workspace); ``allowed`` lists fnmatch patterns of workspace paths that may change
(a folder's path ends with ``/``: ``"splits/*/"`` allows folders below splits but no file);
``says`` are fragments of which the last line must hold one, ``matches`` a regular expression it
must match, ``alone`` asks that stderr be that line only (a refusal before anything runs), and
``prints`` are texts stdout must hold.

The cases run in parallel (a thread pool of subprocesses, ``helpers/bad_input_battery.py``) in
one session fixture that runs only the selected cases, so ``-k`` works and the battery stays
fast on two cores.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.bad_input_battery import (
    Battery,
    _rmtree,
    problems_of,
)
from helpers.bad_input_cases import (
    DISK_FULL,
    DROP,
    DRY_RUN,
    EXPORT,
    KEEPS_DIAGNOSES,
    LOCKED,
    N_VIDEOS,
    OPEN_MISSING_NODE,
    PERMISSION,
    RUN,
    RUN_ID,
    SPLIT_FOLDERS,
    VERIFY,
    Case,
    benchmark_ids,
    case,
    cfg,
    cfg_text,
    chain,
    comments_kept,
    corrupt_utf8,
    full_disk_out_dir,
    full_disk_workspace,
    mkdir,
    move_a_test_video,
    openai_judge,
    own_prompts,
    predictions_file,
    question,
    read_only_workspace,
    remove,
    results_file,
    skill_not_utf8,
    sql,
    symlinked_signals_db,
    tie,
    videos,
    with_comments,
    write,
    write_lock,
)

CASES: list[Case] = [
    # -- 1. the harness db is never written, never the signal store -------------------------
    case("signals-db-is-the-harness-db", cfg({"paths.signals_db": "harness.db"}), RUN, 2,
         says=("harness",)),
    case("signals-db-symlink-to-the-harness-db", symlinked_signals_db, RUN, 2,
         says=("harness",)),
    # -- 2. answers validated against their options at load time ----------------------------
    case("answer-Z", question(answer="Z"), RUN, 2, says=("answer",)),
    case("answer-A-options-B-C", question(answer="A", options=["B. x", "C. y"]), RUN, 2,
         says=("answer",)),
    case("answer-E-on-a-frozen-split", question(answer="E"), RUN, 2, frozen=True,
         says=("answer",)),
    # -- 3. one line, exit 2, for what the user must fix (no traceback) ---------------------
    case("config-not-utf8", corrupt_utf8("video_split.yaml"), RUN, 2, says=("utf-8", "utf8")),
    case("skill-not-utf8", skill_not_utf8, RUN, 2, says=("utf-8", "utf8")),
    case("prompt-template-not-utf8", own_prompts(
        lambda d: (d / "defect_vs_lapse.md").write_bytes(b"Judge caf\xe9 {{question}}\n")),
        RUN, 2, env=(("OPENAI_API_KEY", "sk-test"), ("OPENAI_BASE_URL", "{llm}")),
        needs_llm=True, says=("utf-8", "utf8")),
    case("verify-pools-json-not-utf8", lambda c: c.pools.write_bytes(
        c.pools.read_bytes().replace(b'"test"', b'"t\xe9st"', 1)), VERIFY, 2, frozen=True,
         alone=True, matches=r"^error: pools\.json is not UTF-8 text \(byte \d+: invalid "
                             r"continuation byte\) \(/\S+/pools\.json\): restore it "),
    case("harness-db-not-sqlite", write("harness.db", "agent,question,answer\n"), RUN, 2,
         says=("harness",)),
    case("harness-attempt-two", sql("UPDATE predictions SET attempt = 'two' WHERE rowid = "
                                    "(SELECT MIN(rowid) FROM predictions)"), RUN, 2,
         says=("attempt",)),
    case("harness-db-locked-by-the-agent", None, RUN, 2, hold=write_lock("harness.db"),
         says=LOCKED, slow=True),
    case("export-out-is-a-directory", mkdir("exports"),
         ("export-signals", "--pool", "train", "--out", "{ws}/exports", "--config", "{cfg}"),
         2, frozen=True, says=("directory", "folder")),
    case("import-workspace-is-a-file", results_file,
         ("import", "videomme", "--results", "{scratch}/results.json", "--run-id", "r1",
          "--workspace", "{cfg}"), 2, says=("directory", "folder", "file")),
    case("ctrl-c-during-run", None, RUN, 130, KEEPS_DIAGNOSES, interrupt=True,
         says=("kept",), slow=True),
    case("nan-in-evidence-spans",
         question(evidence_spans=[[float("nan"), 5.0]]), RUN, 2, says=("nan", "finite")),
    case("nan-in-a-question-field", question(views=float("nan")), RUN, 2,
         says=("nan", "finite")),
    # -- 4. the root cause of a failure inside the Dagster run, with the OS's reason --------
    case("signals-db-is-a-directory", mkdir("signals.db"), RUN, 2, SPLIT_FOLDERS,
         says=("directory", "folder"), slow=True),
    case("out-dir-read-only", mkdir("splits", 0o555), RUN, 2, KEEPS_DIAGNOSES,
         unprivileged=True, says=PERMISSION, slow=True),
    case("out-dir-is-a-file", write("splits", "not a folder\n"), RUN, 2, KEEPS_DIAGNOSES,
         says=("not a directory", "is a file", "file exists", "folder"), slow=True),
    case("workspace-read-only", read_only_workspace, RUN, 2, unprivileged=True,
         says=PERMISSION, slow=True),
    case("signals-db-locked", cfg({"diag.prompt_version": "v2"}), RUN, 2, KEEPS_DIAGNOSES,
         frozen=True, hold=write_lock("signals.db"),
         env=(("SPLIT_ASSETS_DB_TIMEOUT_S", "2"),), says=LOCKED, slow=True),
    case("disk-full-workspace", full_disk_workspace, RUN, 2, KEEPS_DIAGNOSES,
         says=DISK_FULL, slow=True),
    case("disk-full-out-dir", full_disk_out_dir, RUN, 2, KEEPS_DIAGNOSES, says=DISK_FULL,
         matches=r"\(/\S+/splits/\S+\): free some disk space", slow=True),  # names the file
    # -- 5. no split frozen while diagnoses are degraded ------------------------------------
    case("openai-degraded-is-never-frozen",  # floor_k {}: nothing else stops the freeze
         chain(openai_judge(), cfg({"video_split.floor_k": {}})), RUN, 1, KEEPS_DIAGNOSES,
         env=(("OPENAI_API_KEY", "sk-test"), ("OPENAI_BASE_URL", "{llm}")), needs_llm=True,
         says=("degraded",), slow=True),
    # -- 6. a failed check leaves no usable output ------------------------------------------
    case("val-ratio-0-fails-power-and-writes-no-split", cfg({"video_split.val_ratio": 0}),
         RUN, 2, KEEPS_DIAGNOSES, slow=True),
    case("val-wrong-min-unreachable", cfg({"video_split.val_wrong_min": 10_000}), RUN, 2,
         KEEPS_DIAGNOSES, says=("val_wrong_min",), slow=True),
    # -- 8. verify cannot be fooled ----------------------------------------------------------
    case("verify-moved-video-manifest-deleted", move_a_test_video(False), VERIFY, 1,
         frozen=True),
    case("verify-moved-video-manifest-sha-patched", move_a_test_video(True), VERIFY, 1,
         frozen=True),
    case("verify-manifest-deleted", lambda c: (c.pools.parent / "split_manifest.json").unlink(),
         VERIFY, 1, frozen=True),
    # -- 9. strict config, feasibility before any judge call --------------------------------
    case("n-trainval-string", cfg({"video_split.n_trainval": "12"}), RUN, 2,
         says=("n_trainval",)),
    case("n-trainval-true", cfg({"video_split.n_trainval": True}), RUN, 2,
         says=("n_trainval",)),
    case("seed-float", cfg({"video_split.seed": 7.0}), RUN, 2, says=("seed",)),
    case("floor-k-value-string", cfg({"video_split.floor_k": {"Action Reasoning": "1"}}),
         RUN, 2, says=("floor_k",)),
    case("duplicate-yaml-key", cfg_text("  seed: 7\n", "  seed: 7\n  seed: 8\n"), RUN, 2,
         says=("seed", "duplicate")),
    case("val-ratio-1-empty-train", cfg({"video_split.val_ratio": 1}), RUN, 2,
         says=("val_ratio",)),
    case("n-trainval-above-the-videos", cfg({"video_split.n_trainval": N_VIDEOS + 1}), RUN,
         2, says=("n_trainval",)),
    case("floor-k-above-the-t2-that-can-exist",
         cfg({"video_split.floor_k": {"Action Reasoning": 50}}), RUN, 2, says=("floor",)),
    # -- 10. smaller things --------------------------------------------------------------------
    case("dry-run-on-a-frozen-split-writes-nothing", None, DRY_RUN, 0, frozen=True),
    case("tie-below-the-winner-winner-stored-first", tie(winner_first=True), DRY_RUN, 0),
    case("tie-below-the-winner-winner-stored-last", tie(winner_first=False), DRY_RUN, 0),
    case("import-keeps-config-comments", chain(with_comments, predictions_file(benchmark_ids)),
         ("import", "predictions", "--jsonl", "{scratch}/preds.jsonl", "--run-id", "cand1",
          "--workspace", "{ws}", "--role", "candidate"), 0,
         ("harness.db", "video_split.yaml"), check=comments_kept),
    # -- config: missing, malformed, unknown -------------------------------------------------
    case("config-file-missing", None, ("run", "--config", "{ws}/nope.yaml"), 2),
    case("unknown-key", cfg_text("  seed: 7\n", "  sede: 7\n"), RUN, 2,
         says=("video_split.seed",)),
    case("missing-required-key", cfg({"video_split.seed": DROP}), RUN, 2, says=("seed",)),
    case("baseline-run-unknown", cfg({"video_split.baseline_run_id": "nope"}), RUN, 2,
         says=("nope",)),
    case("floor-k-typo", cfg({"video_split.floor_k": {"Action Reasonin": 1}}), RUN, 2,
         says=("did you mean",)),
    case("generated-at-not-iso", None, (*RUN, "--generated-at", "yesterday"), 2),
    # -- inputs: missing files and bad records ------------------------------------------------
    case("questions-dir-missing", remove("questions"), RUN, 2),
    case("harness-db-missing", remove("harness.db"), RUN, 2),
    case("trace-missing", sql("DELETE FROM traces"), RUN, 2, says=("trace",)),
    case("tree-missing", remove("store/videos"), RUN, 2, says=("tree",)),
    # a trace opening a node its video's tree lacks: refused wherever a trace is read -- by
    # the judge while undiagnosed, by the input digests once diagnosed (issue 21, point 6)
    case("trace-opens-a-missing-node-undiagnosed", sql(OPEN_MISSING_NODE), RUN, 2,
         KEEPS_DIAGNOSES, says=("opens node 'n9.9.9'",)),
    case("trace-opens-a-missing-node-diagnosed", sql(OPEN_MISSING_NODE), RUN, 2,
         KEEPS_DIAGNOSES, frozen=True, says=("opens node 'n9.9.9'",)),
    case("verify-recompute-trace-opens-a-missing-node", sql(OPEN_MISSING_NODE),
         (*VERIFY, "--recompute"), 2, frozen=True, says=("opens node 'n9.9.9'",)),
    # traces are input digests: one edited after the freeze is named, though the bytes match
    case("verify-recompute-trace-edited", sql(
        "UPDATE traces SET content = '{\"text\": \"edited after the freeze\"}' "
        "WHERE kind = 'thought'"), (*VERIFY, "--recompute"), 1, frozen=True,
        prints=("FAIL inputs_unchanged", "traces")),
    case("predictions-for-unknown-questions", sql(
        f"INSERT INTO predictions VALUES ('{RUN_ID}', 'zzz-9', 'A', 'A', 'stop', 1, "
        "'2026-01-15T09:00:00Z', 's')"), RUN, 2, says=("not in the benchmark",)),
    case("predictions-missing", sql("DELETE FROM predictions WHERE question_id = '001-1'"),
         RUN, 2, says=("no prediction",)),
    case("duplicate-question-id", videos(
        lambda d: d[1]["questions"][0].update(question_id=d[0]["questions"][0]["question_id"])),
        RUN, 2, says=("duplicate",)),
    case("unsafe-video-id", videos(lambda d: d[0].update(video_id="../001")), RUN, 2,
         says=("video_id",)),
    # -- the other commands --------------------------------------------------------------------
    case("export-pool-test", None, (*EXPORT[:2], "test", *EXPORT[3:]), 2, frozen=True),
    case("export-without-a-frozen-split", None, EXPORT, 2),
    case("export-rows-of-test", None, ("export", "jsonl", "--pool", "test", "--out",
                                       "{scratch}/test.jsonl", "--config", "{cfg}"), 2,
         frozen=True, says=("never exported",)),
    case("report-without-a-frozen-split", None, ("report", "--config", "{cfg}"), 2,
         says=("no frozen split",)),
    case("prune-unknown-partition", None, ("partitions", "prune", "fp-000000000000",
                                           "--config", "{cfg}"), 2, says=("partitions list",)),
    case("compare-unknown-candidate", None, ("compare", "--candidate", "nope", "--config",
                                             "{cfg}"), 2, frozen=True, says=("nope",)),
    case("openai-without-key", openai_judge(), RUN, 2, env=(("OPENAI_BASE_URL", "{llm}"),),
         needs_llm=True, says=("OPENAI_API_KEY",)),
    case("prompt-template-missing", own_prompts(lambda d: (d / "missed_nodes.md").unlink()),
         RUN, 2, env=(("OPENAI_API_KEY", "sk-test"), ("OPENAI_BASE_URL", "{llm}")),
         needs_llm=True, says=("missed_nodes",)),
    case("import-run-id-taken", predictions_file(benchmark_ids),
         ("import", "predictions", "--jsonl", "{scratch}/preds.jsonl", "--run-id", RUN_ID,
          "--workspace", "{ws}"), 2, says=(RUN_ID,)),
    case("import-predictions-for-unknown-questions",
         predictions_file(lambda c: [*benchmark_ids(c), "zzz-9"]),
         ("import", "predictions", "--jsonl", "{scratch}/preds.jsonl", "--run-id", "r2",
          "--workspace", "{ws}"), 2),
    # -- issue 21: the command line's own errors are one line too (exit 2) ---------------------
    case("argv-unknown-option", None, ("run", "--bogus"), 2, alone=True,
         says=("error: unrecognized arguments: --bogus (split-assets run): see 'split-assets "
               "run --help'",)),
    case("argv-unknown-option-of-a-nested-command", None,
         ("review", "export", "--n", "1", "--out", "{scratch}/r.csv", "--bogus"), 2, alone=True,
         says=("error: unrecognized arguments: --bogus (split-assets review export): see "
               "'split-assets review export --help'",)),
    case("argv-unknown-command", None, ("bogus",), 2, alone=True,
         says=("error: argument COMMAND: invalid choice: 'bogus' (choose from 'run',",)),
    case("argv-no-command", None, (), 2, alone=True,
         says=("error: the following arguments are required: COMMAND (split-assets): see "
               "'split-assets --help'",)),
    case("argv-missing-required", None, ("compare",), 2, alone=True,
         says=("error: the following arguments are required: --candidate (split-assets "
               "compare): see 'split-assets compare --help'",)),
    case("argv-invalid-choice", None, ("compare", "--candidate", "c", "--pool", "train"), 2,
         alone=True, says=("error: argument --pool: invalid choice: 'train' (choose from "
                           "'validation', 'test') (split-assets compare): see",)),
    case("argv-bad-int", None, ("run", "--allow-degraded", "many"), 2, alone=True,
         says=("error: argument --allow-degraded: invalid int value: 'many' (split-assets run): "
               "see 'split-assets run --help'",)),
    case("argv-help-still-prints-usage", None, ("run", "--help"), 0,
         prints=("usage: split-assets run [-h]", "--dry-run")),
    # -- issue 21: each message names the real cause, the place and the fix -----------------
    case("benchmark-empty", write("questions/videomme.json", "[]\n"), DRY_RUN, 2, alone=True,
         says=("the benchmark is empty: videomme.json in",)),
    case("benchmark-empty-floor-k-empty",
         chain(write("questions/videomme.json", "[]\n"), cfg({"video_split.floor_k": {}})),
         RUN, 2, alone=True, says=("the benchmark is empty: videomme.json in",)),
    case("benchmark-is-a-json-object", write("questions/videomme.json", '{"videos": []}\n'),
         RUN, 2, alone=True, says=("holds a json object (keys: videos), not a list of videos or "
                                   "questions (",)),
    case("verify-pools-json-not-json", lambda c: c.pools.write_bytes(
        c.pools.read_bytes().replace(b'"pools":', b'"pools" ', 1)), VERIFY, 2, frozen=True,
         alone=True, matches=r"^error: pools\.json is not valid JSON: Expecting ':' delimiter at "
                             r"line 1 column \d+ \(/\S+/pools\.json\): restore it "),
    case("verify-manifest-not-json", lambda c: (c.pools.parent / "split_manifest.json")
         .write_text("{", encoding="utf-8"), VERIFY, 2, frozen=True,
         says=("split_manifest.json is not valid JSON: expecting property name enclosed in "
               "double quotes at line 1 column 2 (",)),
    case("config-path-is-a-folder", mkdir("configs"), ("run", "--config", "{ws}/configs"), 2,
         alone=True, says=("the config path is a folder, not a file: ",)),
    case("config-path-is-the-workspace-folder", None, ("run", "--config", "{ws}"), 2,
         alone=True, says=("video_split.yaml",)),
    case("harness-db-0-bytes", write("harness.db", b""), DRY_RUN, 2, alone=True,
         matches=r"^error: the harness database is empty \(0 bytes\): not a harness db "
                 r"\(paths\.harness_db /\S+/harness\.db\): .*split-assets import "),
    case("harness-db-of-another-program", chain(remove("harness.db"), sql(
        "CREATE TABLE runs (id TEXT)")), DRY_RUN, 2, alone=True,
         matches=r"^error: not a harness db: no table 'predictions' \(its tables: runs\) "
                 r"\(paths\.harness_db /\S+\): .*split-assets import "),
    case("store-dir-missing", chain(cfg({"paths.store_dir": DROP}), remove("store")), DRY_RUN,
         2, alone=True, says=("store folder not found: ",)),
    case("store-dir-elsewhere", cfg({"paths.store_dir": "nowhere"}), DRY_RUN, 2, alone=True,
         says=("/nowhere (paths.store_dir): ",)),
    case("skills-version-missing", cfg({"diag.skills_version": "v2"}), DRY_RUN, 2, alone=True,
         says=("(versions present: v1) (diag.skills_version)",)),
]

# Issue 38: a bad input that `run` refuses is refused before the Dagster run starts (nothing on
# stderr before its one line), and `run --dry-run` refuses it with the same exit code and the
# same line. Left out: what only writing can show (a full disk, a lock another program holds)
# and the missing key (the dry run estimates without one).
AT_WRITE_ONLY = frozenset({"signals-db-locked", "disk-full-workspace", "disk-full-out-dir",
                           "openai-without-key"})
REFUSED_BY_RUN = [c for c in CASES if c.argv == RUN and c.exit == 2
                  and c.id not in AT_WRITE_ONLY]
DRY_TWINS = {c.id: dataclasses.replace(c, id=f"{c.id}--dry-run", argv=DRY_RUN, allowed=(),
                                       alone=True, check=None)
             for c in REFUSED_BY_RUN}
CASES = [dataclasses.replace(c, alone=True) if c in REFUSED_BY_RUN else c for c in CASES]
CASES += list(DRY_TWINS.values())


# ------------------------------------------------------------------ running a case -------


def _selected(session: pytest.Session) -> list[Case]:
    by_id = {c.id: c for c in CASES}
    chosen: dict[str, Case] = {}
    for item in session.items:
        callspec = getattr(item, "callspec", None)
        params = callspec.params if callspec is not None else {}
        if isinstance(params.get("case_"), Case):
            chosen[params["case_"].id] = params["case_"]
        if params.get("run_id") in DRY_TWINS:  # the run's case and its dry-run twin
            chosen[params["run_id"]] = by_id[params["run_id"]]
            chosen[DRY_TWINS[params["run_id"]].id] = DRY_TWINS[params["run_id"]]
    return list(chosen.values())


@pytest.fixture(scope="session")
def battery(request: pytest.FixtureRequest) -> Iterator[Battery]:
    # outside pytest's 0700 tmp tree: the unprivileged cases must reach their workspace
    base = Path(tempfile.mkdtemp(prefix="split-assets-bad-inputs-"))
    base.chmod(0o755)
    runner = Battery(base, _selected(request.session))
    try:
        runner.start()
        yield runner
    finally:
        runner.close()
        _rmtree(base)


def test_the_table_is_well_formed() -> None:
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids)), "case ids must be unique"
    assert len(CASES) >= 60
    assert all(c.exit in (0, 1, 2, 130) for c in CASES)


@pytest.mark.timeout(900)  # a case may wait for the cases queued before it
@pytest.mark.parametrize("case_", CASES, ids=[c.id for c in CASES])
def test_bad_input(case_: Case, battery: Battery) -> None:
    result = battery.results[case_.id].result()
    problems = problems_of(case_, result)
    assert not problems, f"{case_.id} ({result.seconds:.1f} s): " + "; ".join(problems)


def _line(result_: Any, case_id: str) -> str:
    """A result's last stderr line, its case's own folder made a placeholder."""
    last = result_.stderr.strip().splitlines()[-1] if result_.stderr.strip() else ""
    return re.sub(rf"/[^ ]*?/{re.escape(case_id)}/", "<case>/", last)


@pytest.mark.timeout(900)
@pytest.mark.parametrize("run_id", sorted(DRY_TWINS))
def test_the_dry_run_refuses_what_the_run_refuses(run_id: str, battery: Battery) -> None:
    run, dry = (battery.results[i].result() for i in (run_id, DRY_TWINS[run_id].id))
    assert (dry.code, _line(dry, DRY_TWINS[run_id].id)) == (run.code, _line(run, run_id))


def _umask() -> int:
    """This process's umask, read without changing it (other threads create files)."""
    with contextlib.suppress(OSError, StopIteration, ValueError):
        status = Path("/proc/self/status").read_text(encoding="utf-8").splitlines()
        return int(next(line for line in status if line.startswith("Umask:")).split()[1], 8)
    return 0o022


@pytest.mark.timeout(600)
def test_frozen_files_are_readable_like_every_other_output(battery: Battery) -> None:
    """Frozen files get the mode of any other file the user creates (not 0600)."""
    frozen = battery.frozen().result()
    umask = _umask()
    for name in ("pools.json", "split_manifest.json"):
        path = frozen.ws / Path(frozen.pools_rel).parent / name
        assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask, (
            f"{name} has mode {oct(stat.S_IMODE(path.stat().st_mode))}")
