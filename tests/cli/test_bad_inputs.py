"""Black-box battery: bad inputs and hostile environments through the ``split-assets`` entry point.

Every case runs the installed ``split-assets`` in a subprocess on a fresh copy of a small
generated workspace (or of the same workspace with a frozen split), with ``DAGSTER_HOME`` outside
it, and asserts the promise of the README ("Errors and exit codes") and of issue 10:

* the exit code: 2 for anything the user must fix in config, input or environment (permissions,
  a full disk, a lock that does not clear), 1 for a run that failed otherwise, 130 for Ctrl-C;
* stderr's last line is ``error: <what> (<where>): <how to fix>`` and stderr has no traceback;
* nothing changed on disk except what the command documents: every file of the workspace is
  hashed before and after (path -> sha256, and the set of paths, folders included), and no
  ``-wal`` / ``-shm`` / ``-journal`` / ``.tmp`` file is left anywhere in it; a ``pools.json``
  never exists without its ``split_manifest.json`` (nor the other way round).

Adding a case: append one ``case(id, mutate, argv, exit, allowed)`` line to ``CASES``.
``mutate`` changes the workspace before the "before" hash (helpers below: ``cfg``, ``cfg_text``,
``sql``, ``videos``, ``question``, ``write``, ``remove``, ``chain``); ``argv`` may use
``{ws}``, ``{cfg}``, ``{pools}`` (the frozen split's pools.json) and ``{scratch}`` (a folder
outside the workspace); ``allowed`` lists fnmatch patterns of workspace paths that may change
(a folder's path ends with ``/``: ``"splits/*/"`` allows folders below splits but no file);
``says`` are fragments of which the last line must hold one, ``matches`` a regular expression it
must match, ``alone`` asks that stderr be that line only (a refusal before anything runs), and
``prints`` are texts stdout must hold.

The cases run in parallel (a thread pool of subprocesses) in one session fixture that runs only
the selected cases, so ``-k`` works and the battery stays fast on two cores.
"""

from __future__ import annotations

import contextlib
import fnmatch
import hashlib
import json
import os
import re
import shutil
import signal
import sqlite3
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from split_assets.config import shipped_prompts_dir
from split_assets.demo import build_workspace

CLI = Path(sys.executable).parent / "split-assets"
N_VIDEOS = 18  # 18 videos x 3 questions: a split freezes with epsilon 0.1 in a few seconds
SEED = 11
EPSILON = 0.1
PIN = "2026-01-01T00:00:00Z"
RUN_ID = "baseline-2026-01"
ERROR_LINE = re.compile(r"^error: .+ \(.+\): .+$")
NOBODY = 65534
IS_ROOT = os.geteuid() == 0
CASE_TIMEOUT_S = 120
LEFTOVER_SUFFIXES = ("-wal", "-shm", "-journal")

# What a failed `run` may leave: the diagnoses it committed (README: "every diagnosis is
# committed as soon as it is made, so a failed run keeps what it paid for") and empty split
# folders -- never a file under out_dir but the selection a finished trainval_selection step
# leaves for frozen_pools (whole, written atomically, beside the split folders) and the cache
# of the digests it computed (data/digest_cache.py).
SPLIT_FOLDERS = ("splits/", "splits/*/")
SELECTION = ("splits/.steps/", "splits/.steps/*/", "splits/.steps/*/*/",
             "splits/.steps/*/*/trainval_selection.json",
             "splits/.steps/input_digests_cache.json")
KEEPS_DIAGNOSES = ("signals.db", *SPLIT_FOLDERS, *SELECTION)

RUN = ("run", "--config", "{cfg}")
DRY_RUN = ("run", "--dry-run", "--config", "{cfg}")
VERIFY = ("verify", "{pools}", "--config", "{cfg}")
EXPORT = ("export-signals", "--pool", "train", "--out", "{scratch}/train.jsonl", "--config",
          "{cfg}")

# Fragments of the last line (any of them, case-insensitive) for the environment failures:
# the OS's (or SQLite's) own reason must be shown, not "step X failed".
PERMISSION = ("permission denied", "read-only", "readonly", "not writable")
OPEN_MISSING_NODE = ("UPDATE traces SET content = "
                     "'{\"tool\": \"open_node\", \"args\": {\"node_id\": \"n9.9.9\"}}' "
                     "WHERE kind = 'tool_call' AND content LIKE '%open_node%'")
DISK_FULL = ("no space left", "file too large", "disk is full", "disk full")
LOCKED = ("locked", "busy")


# ------------------------------------------------------------------ the case context -----

@dataclass
class Ctx:
    """What a case's mutation and hooks see: the copy of the workspace and its surroundings."""

    ws: Path
    scratch: Path
    stack: contextlib.ExitStack
    pools_rel: str | None = None
    llm_url: str = ""
    fsize_limit: int | None = None  # RLIMIT_FSIZE for the command (disk-full fallback)

    @property
    def cfg(self) -> Path:
        return self.ws / "video_split.yaml"

    @property
    def pools(self) -> Path:
        assert self.pools_rel is not None, "this case needs frozen=True"
        return self.ws / self.pools_rel

    def placeholders(self) -> dict[str, str]:
        return {"ws": str(self.ws), "cfg": str(self.cfg), "scratch": str(self.scratch),
                "pools": str(self.pools) if self.pools_rel else "", "llm": self.llm_url}


Mutation = Callable[[Ctx], None]
Hold = Callable[[Ctx], contextlib.AbstractContextManager[Any]]


@dataclass(frozen=True)
class Result:
    code: int | None
    stdout: str
    stderr: str
    before: dict[str, str]
    after: dict[str, str]
    seconds: float
    extra: list[str] = field(default_factory=list)  # problems found by the case's own check


@dataclass(frozen=True)
class Case:
    """One row of the battery (see the module docstring)."""

    id: str
    mutate: Mutation | None
    argv: tuple[str, ...]
    exit: int
    allowed: tuple[str, ...] = ()
    frozen: bool = False  # start from the workspace with a frozen split
    env: tuple[tuple[str, str], ...] = ()  # extra environment (placeholders allowed)
    unprivileged: bool = False  # run as uid/gid 65534 (the tests run as root)
    hold: Hold | None = None  # a context held while the command runs (a lock)
    interrupt: bool = False  # send SIGINT after the first line on stderr
    says: tuple[str, ...] = ()  # the last line holds one of these (case-insensitive)
    matches: str = ""  # a regular expression the last line must match (re.search)
    alone: bool = False  # stderr is that one line, nothing before it (a refusal up front)
    prints: tuple[str, ...] = ()  # stdout holds each of these (a command that succeeds)
    check: Callable[[Ctx], list[str]] | None = None  # extra post-conditions
    needs_llm: bool = False
    slow: bool = False  # started first (waits on a lock, runs the whole pipeline)


def case(id: str, mutate: Mutation | None, argv: tuple[str, ...], exit: int,
         allowed: tuple[str, ...] = (), **extra: Any) -> Case:
    """One row: ``(id, mutate_workspace, argv, expected_exit, allowed_changes)``; ``extra`` are
    the optional fields of ``Case``."""
    return Case(id, mutate, argv, exit, allowed, **extra)


# ------------------------------------------------------------------ mutation helpers -----

DROP = object()


def chain(*steps: Mutation) -> Mutation:
    def apply(c: Ctx) -> None:
        for step in steps:
            step(c)
    return apply


def cfg(values: dict[str, Any]) -> Mutation:
    """Set (or with DROP delete) dotted keys of video_split.yaml (comments are lost)."""
    def apply(c: Ctx) -> None:
        data = yaml.safe_load(c.cfg.read_text(encoding="utf-8"))
        for dotted, value in values.items():
            *parents, last = dotted.split(".")
            node = data
            for part in parents:
                node = node.setdefault(part, {})
            if value is DROP:
                node.pop(last)
            else:
                node[last] = value
        c.cfg.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return apply


def cfg_text(old: str, new: str | bytes) -> Mutation:
    """Replace text of video_split.yaml byte for byte (keeps everything else as written)."""
    def apply(c: Ctx) -> None:
        raw = c.cfg.read_bytes()
        assert old.encode() in raw, f"{old!r} not in the config"
        c.cfg.write_bytes(raw.replace(old.encode(), new if isinstance(new, bytes)
                                      else new.encode(), 1))
    return apply


def sql(*statements: str) -> Mutation:
    """Run statements on the harness db (rollback journal: nothing is left beside it)."""
    def apply(c: Ctx) -> None:
        conn = sqlite3.connect(c.ws / "harness.db")
        try:
            for statement in statements:
                conn.execute(statement)
            conn.commit()
        finally:
            conn.close()
    return apply


def videos(edit: Callable[[list[dict[str, Any]]], None]) -> Mutation:
    """Edit the benchmark (official layout: a list of videos with their questions)."""
    def apply(c: Ctx) -> None:
        path = c.ws / "questions" / "videomme.json"
        data = json.loads(path.read_text(encoding="utf-8"))
        edit(data)
        path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")  # NaN allowed
    return apply


def question(**fields: Any) -> Mutation:
    """Set fields of the benchmark's first question."""
    return videos(lambda data: data[0]["questions"][0].update(fields))


def write(rel: str, data: str | bytes) -> Mutation:
    def apply(c: Ctx) -> None:
        path = c.ws / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data if isinstance(data, bytes) else data.encode())
    return apply


def remove(rel: str) -> Mutation:
    def apply(c: Ctx) -> None:
        path = c.ws / rel
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
    return apply


def mkdir(rel: str, mode: int = 0o755) -> Mutation:
    def apply(c: Ctx) -> None:
        (c.ws / rel).mkdir(parents=True, exist_ok=True)
        (c.ws / rel).chmod(mode)
    return apply


def corrupt_utf8(rel: str) -> Mutation:
    """Put a byte that is not UTF-8 (Latin-1 e-acute) into a text file where it is otherwise
    harmless: a YAML comment, a JSON string, a line of Markdown."""
    def apply(c: Ctx) -> None:
        path = c.ws / rel
        raw = path.read_bytes()
        if rel.endswith(".yaml"):
            raw = raw.rstrip(b"\n") + b"\n# caf\xe9\n"
        elif rel.endswith(".json"):
            assert b'"question": "' in raw
            raw = raw.replace(b'"question": "', b'"question": "caf\xe9 ', 1)
        else:
            raw = raw.rstrip(b"\n") + b"\ncaf\xe9\n"
        path.write_bytes(raw)
    return apply


def first_skill(c: Ctx) -> str:
    folder = c.ws / "store" / "skills" / "v1"
    return str(sorted(folder.glob("*.md"))[0].relative_to(c.ws))


def skill_not_utf8(c: Ctx) -> None:
    corrupt_utf8(first_skill(c))(c)


def openai_judge(**openai: Any) -> Mutation:
    """diag.judge openai with fast, bounded call settings."""
    settings = {"max_retries": 1, "backoff_base_s": 0.01, "backoff_max_s": 0.05,
                "breaker_threshold": 100, "timeout_s": 10.0, **openai}
    return cfg({"diag.judge": "openai", "diag.model": "fake-model", "diag.concurrency": 2,
                "diag.openai": settings})


def own_prompts(edit: Callable[[Path], None]) -> Mutation:
    """A copy of the shipped prompts as diag.prompts_dir, edited, with the openai judge (the
    rules judge reads no template)."""
    def apply(c: Ctx) -> None:
        shutil.copytree(shipped_prompts_dir(), c.ws / "prompts")
        edit(c.ws / "prompts")
        openai_judge()(c)
        cfg({"diag.prompts_dir": "prompts"})(c)
    return apply


def move_a_test_video(patch_manifest_sha: bool) -> Mutation:
    """Tamper with the frozen split: move the first test video into train, keep the JSON
    canonical; then delete the manifest, or patch its pools_sha256 to the new bytes."""
    def apply(c: Ctx) -> None:
        bench = json.loads((c.ws / "questions" / "videomme.json").read_text(encoding="utf-8"))
        qids = {v["video_id"]: [q["question_id"] for q in v["questions"]] for v in bench}
        doc = json.loads(c.pools.read_bytes())
        video = doc["videos"]["test"][0]
        doc["videos"]["test"].remove(video)
        doc["videos"]["train"] = sorted(doc["videos"]["train"] + [video])
        doc["pools"]["test"] = [q for q in doc["pools"]["test"] if q not in qids[video]]
        doc["pools"]["train"] = sorted(doc["pools"]["train"] + qids[video])
        old = hashlib.sha256(c.pools.read_bytes()).hexdigest()
        new_bytes = (json.dumps(doc, sort_keys=True, separators=(",", ":"),
                                ensure_ascii=False) + "\n").encode()
        c.pools.write_bytes(new_bytes)
        manifest = c.pools.parent / "split_manifest.json"
        if patch_manifest_sha:
            text = manifest.read_text(encoding="utf-8")
            assert old in text
            manifest.write_text(text.replace(old, hashlib.sha256(new_bytes).hexdigest()),
                                encoding="utf-8")
        else:
            manifest.unlink()
    return apply


def tie(winner_first: bool) -> Mutation:
    """Question 001-1 gets two rows with the same (attempt 1, created_at) and different content,
    below its winning row (attempt 2), which is stored before or after them. The canonical row
    is the winner either way (README: the greatest (attempt, created_at)), so the physical row
    order must not decide whether this is an error."""
    def apply(c: Ctx) -> None:
        conn = sqlite3.connect(c.ws / "harness.db")
        try:
            row = conn.execute("SELECT * FROM predictions WHERE question_id = '001-1' "
                               "ORDER BY attempt DESC, created_at DESC").fetchone()
            conn.execute("DELETE FROM predictions WHERE question_id = '001-1'")
            winner = list(row)
            winner[5], winner[6] = 2, "2026-01-15T12:00:00Z"
            losers = [[*row[:2], letter, f"The best answer is {letter}.", "stop", 1,
                       "2026-01-15T11:00:00Z", "sess-tie"] for letter in ("A", "B")]
            rows = [winner, *losers] if winner_first else [*losers, winner]
            conn.executemany("INSERT INTO predictions VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
            conn.commit()
        finally:
            conn.close()
    return apply


def symlinked_signals_db(c: Ctx) -> None:
    (c.ws / "sig.db").symlink_to("harness.db")
    cfg({"paths.signals_db": "sig.db"})(c)


def results_file(c: Ctx) -> None:
    from helpers.official_layout import write_results

    write_results(c.scratch / "results.json", 6, "r1")


def predictions_file(qids: Callable[[Ctx], list[str]]) -> Mutation:
    def apply(c: Ctx) -> None:
        lines = [json.dumps({"question_id": q, "response": "The best answer is A."})
                 for q in qids(c)]
        (c.scratch / "preds.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return apply


def benchmark_ids(c: Ctx) -> list[str]:
    bench = json.loads((c.ws / "questions" / "videomme.json").read_text(encoding="utf-8"))
    return [q["question_id"] for v in bench for q in v["questions"]]


def with_comments(c: Ctx) -> None:
    cfg_text("  seed: 7\n", "  seed: 7  # chosen by the team, keep\n")(c)
    text = c.cfg.read_text(encoding="utf-8")
    c.cfg.write_text("# Owner: the eval team. Do not reformat.\n" + text, encoding="utf-8")


def comments_kept(c: Ctx) -> list[str]:
    text = c.cfg.read_text(encoding="utf-8")
    problems = [f"comment {s!r} dropped from video_split.yaml"
                for s in ("# Owner: the eval team. Do not reformat.",
                          "seed: 7  # chosen by the team, keep",
                          "# Generated by split_assets.demo.build_workspace")
                if s not in text]
    if "cand1" not in (yaml.safe_load(text).get("evaluation") or {}).get("candidates", []):
        problems.append("cand1 not registered in evaluation.candidates")
    return problems


# -- environments: permissions, full disks, locks -------------------------------------------

def read_only_workspace(c: Ctx) -> None:
    for path in sorted(c.ws.rglob("*"), reverse=True):
        if not path.is_symlink():
            path.chmod(0o555 if path.is_dir() else 0o444)
    c.ws.chmod(0o555)


def _tmpfs(path: Path, size: int) -> bool:
    """Mount a tmpfs of ``size`` bytes on ``path`` (root only); False if that is not possible."""
    if not IS_ROOT or shutil.which("mount") is None:
        return False
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs",
                           str(path)], capture_output=True, check=False)
    return proc.returncode == 0


def _umount(path: Path) -> None:
    subprocess.run(["umount", str(path)], capture_output=True, check=False)


def _pages(root: Path) -> int:
    return sum(-(-p.stat().st_size // 4096) * 4096 for p in root.rglob("*") if p.is_file())


def full_disk_workspace(c: Ctx) -> None:
    """The whole workspace on a tmpfs with 8 KiB to spare (else RLIMIT_FSIZE of 8 KiB)."""
    stash = c.scratch / "stash"
    shutil.move(c.ws, stash)
    c.ws.mkdir()
    if _tmpfs(c.ws, _pages(stash) + 8192):
        c.stack.callback(_umount, c.ws)
    else:
        c.fsize_limit = 8192
    shutil.copytree(stash, c.ws, symlinks=True, dirs_exist_ok=True)
    shutil.rmtree(stash)


def full_disk_out_dir(c: Ctx) -> None:
    """out_dir on a one-page tmpfs: pools.json (1.5 KB) fits, the manifest (5.6 KB) does not
    (else RLIMIT_FSIZE of 4 KiB)."""
    (c.ws / "splits").mkdir()
    if _tmpfs(c.ws / "splits", 4096):
        c.stack.callback(_umount, c.ws / "splits")
    else:
        c.fsize_limit = 4096


LOCK_SCRIPT = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
sys.stdin.read()
conn.execute("ROLLBACK")
conn.close()
"""


def write_lock(rel: str) -> Hold:
    """Another process holds a write lock (BEGIN EXCLUSIVE) on a db while the command runs.
    (A separate process: closing any descriptor of the file in this one, as hashing does,
    would drop a POSIX lock held here.)"""
    @contextlib.contextmanager
    def hold(c: Ctx) -> Iterator[None]:
        proc = subprocess.Popen([sys.executable, "-c", LOCK_SCRIPT, str(c.ws / rel)],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
            yield
        finally:
            proc.communicate(timeout=30)
    return hold


# ------------------------------------------------------------------ the table ------------

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


# ------------------------------------------------------------------ running a case -------

def snapshot(root: Path) -> dict[str, str]:
    """Every path under ``root`` -> sha256 of a file, ``<dir>`` (path ending in '/'), or the
    target of a symlink."""
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        base = Path(dirpath)
        for name in dirnames + filenames:
            path = base / name
            rel = path.relative_to(root).as_posix()
            if path.is_symlink():
                out[rel] = f"-> {os.readlink(path)}"
            elif path.is_dir():
                out[rel + "/"] = "<dir>"
            else:
                out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


FSIZE_WRAPPER = ("import os, resource, sys; n = int(sys.argv[1]); "
                 "resource.setrlimit(resource.RLIMIT_FSIZE, (n, n)); "
                 "os.execv(sys.argv[2], sys.argv[2:])")


def _command(c: Ctx, case_: Case) -> list[str]:
    values = c.placeholders()
    cmd = [str(CLI), *(arg.format(**values) for arg in case_.argv)]
    if c.fsize_limit is not None:
        cmd = [sys.executable, "-c", FSIZE_WRAPPER, str(c.fsize_limit), *cmd]
    if case_.unprivileged and IS_ROOT:
        cmd = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *cmd]
    return cmd


def _text(data: str | bytes | None) -> str:
    """What a timed-out process wrote (TimeoutExpired holds bytes even with text=True)."""
    return data.decode("utf-8", "replace") if isinstance(data, bytes) else data or ""


def _interrupted(cmd: list[str], env: dict[str, str]) -> tuple[int | None, str, str]:
    """Start the command, send SIGINT once it wrote its first line on stderr."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)
    assert proc.stderr is not None
    first = proc.stderr.readline()
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=CASE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        return None, _text(out), first + _text(err)
    return proc.returncode, out, first + err


def _chown_tree(root: Path, uid: int) -> None:
    os.chown(root, uid, uid)
    for path in root.rglob("*"):
        os.chown(path, uid, uid, follow_symlinks=False)


_HOME_TEMPLATE: list[Path] = []  # an initialized instance, set once by the Battery


def _init_home_template(home: Path) -> None:
    """A Dagster instance whose storage exists (creating it costs seconds per case)."""
    home.mkdir(parents=True)
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n", encoding="utf-8")
    code = "from dagster import DagsterInstance; DagsterInstance.get().dispose()"
    subprocess.run([sys.executable, "-c", code], env=dict(os.environ, DAGSTER_HOME=str(home)),
                   check=True, capture_output=True)
    _HOME_TEMPLATE[:] = [home]


def _environment(dagster_home: Path) -> dict[str, str]:
    """This process's environment without the endpoint, the config or a failpoint, and a
    fresh Dagster instance (telemetry off) outside the workspace."""
    if _HOME_TEMPLATE and not dagster_home.exists():
        shutil.copytree(_HOME_TEMPLATE[0], dagster_home)
    dagster_home.mkdir(exist_ok=True)
    (dagster_home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n",
                                               encoding="utf-8")
    env = {k: v for k, v in _environ_snapshot().items()
           if not k.startswith(("OPENAI_", "SPLIT_ASSETS_")) and k != "DAGSTER_HOME"}
    env["DAGSTER_HOME"] = str(dagster_home)
    return env


def _environ_snapshot() -> dict[str, str]:
    """``os.environ`` copied from a worker thread while pytest's main thread may set or
    delete PYTEST_CURRENT_TEST: a key gone between listing and reading is read again."""
    while True:
        try:
            return dict(os.environ)
        except KeyError:
            continue


def run_case(case_: Case, root: Path, template: Path, frozen: Frozen | None,
             llm_url: str) -> Result:
    ws, scratch, home = root / "ws", root / "scratch", root / "dagster_home"
    shutil.copytree(frozen.ws if case_.frozen and frozen else template, ws, symlinks=True)
    scratch.mkdir()
    env = _environment(home)
    with contextlib.ExitStack() as stack:
        c = Ctx(ws, scratch, stack, frozen.pools_rel if case_.frozen and frozen else None,
                llm_url)
        env.update({k: v.format(**c.placeholders()) for k, v in case_.env})
        if case_.mutate is not None:
            case_.mutate(c)
        if case_.unprivileged and IS_ROOT:
            env["HOME"] = str(scratch)
            _chown_tree(root, NOBODY)
        before = snapshot(ws)
        cmd = _command(c, case_)
        started = time.monotonic()
        with case_.hold(c) if case_.hold else contextlib.nullcontext():
            if case_.interrupt:
                code, out, err = _interrupted(cmd, env)
            else:
                try:
                    proc = subprocess.run(cmd, capture_output=True, text=True, env=env,
                                          timeout=CASE_TIMEOUT_S, check=False)
                    code, out, err = proc.returncode, proc.stdout, proc.stderr
                except subprocess.TimeoutExpired as exc:
                    code, out, err = None, _text(exc.stdout), _text(exc.stderr)
        seconds = time.monotonic() - started
        after = snapshot(ws)
        extra = case_.check(c) if case_.check else []
    return Result(code, out, err, before, after, seconds, extra)


def unpaired(paths: dict[str, str]) -> set[str]:
    """A pools.json without its split_manifest.json beside it, or the other way round."""
    out = set()
    for p in paths:
        for name, twin in (("pools.json", "split_manifest.json"),
                           ("split_manifest.json", "pools.json")):
            if (p == name or p.endswith("/" + name)) and p[: -len(name)] + twin not in paths:
                out.add(f"{p} without its {twin}")
    return out


def problems_of(case_: Case, r: Result) -> list[str]:
    """Everything wrong with one case's outcome (empty: the case passes)."""
    problems = []
    lines = r.stderr.strip().splitlines()
    last = lines[-1] if lines else ""
    if r.code is None:
        problems.append(f"no exit within {CASE_TIMEOUT_S} s (killed), expected {case_.exit}")
    elif r.code != case_.exit:
        problems.append(f"exit {r.code}, expected {case_.exit}")
    if "Traceback" in r.stderr:
        problems.append("stderr holds a traceback")
    if case_.exit != 0:
        if not ERROR_LINE.match(last):
            problems.append("last stderr line is not 'error: <what> (<where>): <fix>'")
        if case_.says and not any(s.lower() in last.lower() for s in case_.says):
            problems.append(f"last line says none of {list(case_.says)}")
        if case_.matches and not re.search(case_.matches, last):
            problems.append(f"last line does not match {case_.matches!r}")
        if case_.alone and len(lines) != 1:
            problems.append(f"stderr has {len(lines)} lines, expected the error line alone")
    problems.extend(f"stdout lacks {text!r}" for text in case_.prints if text not in r.stdout)
    changed = sorted(p for p in r.before.keys() | r.after.keys()
                     if r.before.get(p) != r.after.get(p))
    unexpected = [p for p in changed if not any(fnmatch.fnmatchcase(p, pat)
                                                for pat in case_.allowed)]
    if unexpected:
        def how(p: str) -> str:
            return "new" if p not in r.before else "gone" if p not in r.after else "changed"

        shown = ", ".join(f"{p} ({how(p)})" for p in unexpected[:8])
        problems.append(f"changed on disk: {shown}")
    leftovers = [p for p in r.after if p.rstrip("/").endswith(LEFTOVER_SUFFIXES)
                 or ".tmp" in p.rstrip("/").rsplit("/", 1)[-1]]
    if leftovers:
        problems.append(f"left behind: {', '.join(leftovers)}")
    problems.extend(sorted(unpaired(r.after) - unpaired(r.before)))
    problems.extend(r.extra)
    if problems:
        problems.append(f"last stderr line: {last[:400]!r}")
    return problems


# ------------------------------------------------------------------ the session -----------

@dataclass(frozen=True)
class Frozen:
    """The workspace with a frozen split, and where its pools.json is."""

    ws: Path
    pools_rel: str


def _make_template(directory: Path) -> Path:
    summary = build_workspace(directory, n_videos=N_VIDEOS, seed=SEED)
    text = summary.config_path.read_text(encoding="utf-8")
    assert "  epsilon: 0.02\n" in text
    summary.config_path.write_text(text.replace("  epsilon: 0.02\n", f"  epsilon: {EPSILON}\n"),
                                   encoding="utf-8")
    return directory


def _freeze(template: Path, directory: Path) -> Frozen:
    ws = directory / "ws"
    shutil.copytree(template, ws)
    env = _environment(directory / "dagster_home")
    proc = subprocess.run([str(CLI), "run", "--config", str(ws / "video_split.yaml"),
                           "--generated-at", PIN], capture_output=True, text=True, env=env,
                          timeout=CASE_TIMEOUT_S, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    pools = dict(line.split("=", 1) for line in proc.stdout.splitlines() if "=" in line)["pools"]
    leftovers = [p for p in ws.rglob("*") if p.name.endswith(LEFTOVER_SUFFIXES)]
    assert not leftovers, f"the freeze left {leftovers}"
    return Frozen(ws, Path(pools).relative_to(ws).as_posix())


def _rmtree(path: Path) -> None:
    def writable(func: Callable[..., Any], target: str, _exc: Any) -> None:
        os.chmod(os.path.dirname(target), 0o755)
        with contextlib.suppress(OSError):
            os.chmod(target, 0o755)
        func(target)

    shutil.rmtree(path, onerror=writable)  # onexc is 3.12+


class Battery:
    """Runs the selected cases in parallel; ``results[id]`` once done."""

    def __init__(self, base: Path, cases: list[Case]) -> None:
        self.base = base
        self.cases = cases
        self.template = _make_template(base / "template")
        _init_home_template(base / "dagster_home_template")
        workers = max(3, min(6, (os.cpu_count() or 2) + 1))
        self.pool = ThreadPoolExecutor(max_workers=workers)
        self._frozen: Future[Frozen] | None = None
        self._lock = threading.Lock()
        self.results: dict[str, Future[Result]] = {}
        self.llm = None

    def frozen(self) -> Future[Frozen]:
        with self._lock:
            if self._frozen is None:
                self._frozen = self.pool.submit(_freeze, self.template, self.base / "frozen")
            return self._frozen

    def start(self) -> None:
        if any(c.needs_llm for c in self.cases):
            from helpers.llm_server import Action, FakeLLM

            # every answer is prose, not a diagnosis: a diagnosis ends degraded
            self.llm = FakeLLM(responder=lambda body, index: Action("invalid_json")).start()
        if any(c.frozen for c in self.cases):
            self.frozen()
        url = self.llm.base_url if self.llm else ""
        ordered = sorted(self.cases, key=lambda c: (not c.slow, c.frozen))
        for c in ordered:
            self.results[c.id] = self.pool.submit(self._run, c, url)

    def _run(self, case_: Case, url: str) -> Result:
        frozen = self.frozen().result() if case_.frozen else None
        root = self.base / case_.id
        root.mkdir()
        return run_case(case_, root, self.template, frozen, url)

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)
        if self.llm is not None:
            self.llm.stop()


def _selected(session: pytest.Session) -> list[Case]:
    chosen = []
    for item in session.items:
        callspec = getattr(item, "callspec", None)
        if callspec is not None and isinstance(callspec.params.get("case_"), Case):
            chosen.append(callspec.params["case_"])
    return chosen


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
