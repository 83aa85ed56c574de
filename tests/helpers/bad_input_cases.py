"""The case language of ``tests/cli/test_bad_inputs.py``: ``case(...)`` and the mutations a case
applies to its workspace before it runs (its docstring explains each field)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from split_assets.settings import shipped_prompts_dir

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
# of the digests it computed (store/digest_cache.py).
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
