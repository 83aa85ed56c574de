"""Writing an imported run into a workspace, for every importer: the checks before anything
is written (run id, workspace, a run id already present unless ``replace``, which also deletes
that run's signals), the first import's benchmark, harness db and ``video_split.yaml``, and the
run's rows in one transaction. The config is read and written through
``split_assets.sources.config_file`` (ruamel.yaml's round-trip mode): an update keeps the user's
comments, key order, quoting and layout."""


from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from split_assets.errors import InputError, UserError
from split_assets.importing.workspace_setup import (
    HARNESS_DB,
    SIGNALS_DB,
    Answer,
    BuiltBenchmark,
    new_config,
    register,
)
from split_assets.lib.canonical import atomic_write_bytes
from split_assets.sources.benchmark import Benchmark, Levels, load_benchmark
from split_assets.sources.config_file import (
    CONFIG_FILE,
    load_workspace_config,
    save_document,
)
from split_assets.sources.harness_db import create_tables, insert_predictions, run_ids
from split_assets.sources.letters import DEFAULT_RULE
from split_assets.store.conventions import utc_now
from split_assets.store.opening import delete_run_signals
from split_assets.store.signals_pg import is_store_url

QUESTIONS = "questions"
BENCHMARK_FILE = f"{QUESTIONS}/videomme.json"  # Video-MME's; other benchmarks: <profile>.json
ROLES = ("reference", "candidate", "control")


class LookLine(str):
    """The line of an import that was a test look (``evaluation/sealed.py``): said on stderr,
    where the user sees it beside the command's other messages (``ImportSummary.said``)."""


@dataclass
class ImportSummary:
    """What an import did (printed by the CLI)."""

    run_id: str
    questions: int
    answered: int
    workspace: Path
    created: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        """What the CLI prints on stdout."""
        out = [f"imported run {self.run_id}: {self.answered} answers to {self.questions} "
               f"questions into {self.workspace}"]
        out += [f"wrote {name}" for name in self.created]
        return out + [n for n in self.notes if not isinstance(n, LookLine)]

    def said(self) -> list[str]:
        """What the CLI says on stderr: the test look an import was (``sealed.LookLine``)."""
        return [str(n) for n in self.notes if isinstance(n, LookLine)]


# (run id, the role as given or None, the answers, the workspace's benchmark) -> notes
ImportGate = Callable[[str, "str | None", dict[str, Answer], Benchmark], list[str]]


def finish_import(source: Path, run_id: str, workspace: Path, answers: dict[str, Answer], *,
                  replace: bool, partial: bool, role: str | None, built: BuiltBenchmark | None,
                  default_role: str | None = "reference",
                  gate: ImportGate | None = None, register_run: bool = True) -> ImportSummary:
    """Everything after a source file was read, alike for every importer: the benchmark (the
    source's own on a first import, else the workspace's, which the source must match), the
    answers checked against it, then -- only when every check passed -- the benchmark, the
    run and the config written. The first import makes the run the baseline; a later one is
    registered as ``role`` (else ``default_role``; None: not registered). ``gate``: called
    on a later import after every check passed and before anything is written, with the
    role as given (None: not given); it may refuse, and its lines are the summary's notes
    (``evaluation/sealed.py``: a frozen split's rules). ``register_run`` False: the run is
    written with its role's rules but not listed in the config (an optimizer's many
    candidates, ``split_assets.loops``)."""
    benchmark, first = _import_benchmark(workspace, source, built)
    unknown = sorted(set(answers) - set(benchmark.by_id))
    if unknown:
        raise InputError(f"{len(unknown)} of {len(answers)} question ids are not in the "
                         f"workspace's benchmark (e.g. {', '.join(unknown[:5])})", str(source),
                         "import answers to the same benchmark")
    _check_missing(set(benchmark.by_id) - set(answers), len(benchmark.by_id), source, partial)
    config = workspace / CONFIG_FILE
    role_now = role or default_role
    if role is not None and not first and not config.is_file():
        raise UserError(f"no {CONFIG_FILE} in {workspace} to register the run in",
                        "--role", "import the baseline with 'split-assets import'")
    _check_run_free(workspace, run_id, replace)
    doc = (load_workspace_config(config)
           if role_now is not None and config.exists() and register_run else None)
    summary = ImportSummary(run_id, len(benchmark.by_id), 0, workspace)
    if gate is not None and not first:
        summary.notes += gate(run_id, role, answers, benchmark)
    if first and built is not None:  # everything checked: write
        atomic_write_bytes(workspace / QUESTIONS / built.name, built.data)
        summary.created.append(f"{QUESTIONS}/{built.name}")
    _write_run(workspace, run_id, answers, replace, summary)
    if first and not config.exists():
        save_document(config, new_config(benchmark, run_id, answers,
                                         built.settings if built else {}))
        summary.created.append(CONFIG_FILE)
        summary.notes.append(f"baseline_run_id: {run_id}; run it with: split-assets run "
                             f"--config {config}")
    elif doc is not None and role_now is not None and register(doc, config, run_id, role_now,
                                                               summary.notes):
        save_document(config, doc)
    elif role_now is not None and doc is None and register_run:
        summary.notes.append(f"no {CONFIG_FILE} in {workspace}: {run_id} is not registered "
                             f"as a {role_now} run (add it to the config by hand)")
    return summary


def workspace_benchmark(workspace: Path) -> Benchmark | None:
    """The workspace's benchmark (questions/*.json*), read with its config's difficulty
    levels and letter rule; None before the first import."""
    folder = workspace / QUESTIONS
    if not folder.is_dir() or not any(p.suffix in (".json", ".jsonl") for p in folder.iterdir()):
        return None
    vs: dict[str, Any] = {}
    config = workspace / CONFIG_FILE
    if config.is_file():
        try:
            vs = (yaml.safe_load(config.read_text(encoding="utf-8")) or {}).get("video_split")
        except (yaml.YAMLError, UnicodeDecodeError, AttributeError):
            vs = {}
    vs = vs if isinstance(vs, dict) else {}
    levels = Levels.of(vs.get("difficulty_field", "duration"), vs.get("difficulty_edges"),
                       vs.get("difficulty_levels"))
    return load_benchmark(folder, levels, str(vs.get("letter_rule") or DEFAULT_RULE))


def _import_benchmark(workspace: Path, source: Path,
                      built: BuiltBenchmark | None) -> tuple[Benchmark, bool]:
    """The benchmark an import checks against, and whether this is the workspace's first
    import: the source's own (first import), else the workspace's, which it must match."""
    benchmark = workspace_benchmark(workspace)
    if benchmark is not None:
        if built is not None:
            _check_matches(benchmark, built.benchmark, source)
        return benchmark, False
    if built is None:
        raise UserError(f"no benchmark in {workspace} ({QUESTIONS}/)", "--workspace",
                        "import the baseline first from a file that carries the questions "
                        "(split-assets import videomme, lmms-eval samples with docs, or "
                        "--annotations)")
    if (workspace / HARNESS_DB).exists():
        raise UserError(f"{workspace / HARNESS_DB} exists but {QUESTIONS}/ holds no benchmark",
                        str(workspace), "import into an empty folder or a workspace made "
                                        "by 'split-assets import'")
    return built.benchmark, True


def check_run_id(run_id: str) -> None:
    if not run_id or run_id.strip() != run_id or not run_id.isprintable():
        raise UserError(f"run id {run_id!r} is empty, has surrounding spaces or control "
                        "characters", "--run-id", "pass a plain run id such as gpt4o-2026-01")


def check_workspace(workspace: Path) -> None:
    if workspace.exists() and not workspace.is_dir():
        raise UserError(f"the workspace {workspace} is a file, not a folder", "--workspace",
                        "pass a folder (the first import creates it)")


def text_or_none(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value)


def _check_run_free(workspace: Path, run_id: str, replace: bool) -> None:
    db = workspace / HARNESS_DB
    if db.is_file() and run_id in run_ids(db) and not replace:
        raise UserError(f"run {run_id!r} is already in {db}", "--run-id",
                        "pick another run id, or pass --replace to overwrite it (its signals "
                        "are deleted too)")


def _write_run(workspace: Path, run_id: str, answers: dict[str, Answer], replace: bool,
               summary: ImportSummary) -> None:
    """The run's rows in one transaction. With ``replace`` the run's signals go first (if
    that fails nothing is changed: stale diagnoses must never describe new answers), then its
    old rows."""
    if replace:
        _delete_signals(_signals_path(workspace), run_id, summary)
    db = workspace / HARNESS_DB
    db.parent.mkdir(parents=True, exist_ok=True)
    now = utc_now()
    try:
        conn = sqlite3.connect(db)
    except sqlite3.Error as exc:
        raise UserError(f"could not open the harness db to write run {run_id!r}: {exc}", str(db),
                        "make it a writable SQLite file (or remove it) and import again") from None
    try:
        with conn:
            create_tables(conn)
            replaced = conn.execute("DELETE FROM predictions WHERE run_id = ?",
                                    (run_id,)).rowcount if replace else 0
            conn.execute("DELETE FROM traces WHERE run_id = ?", (run_id,))
            insert_predictions(conn, [(run_id, qid, a.prediction, a.response, a.stop_reason,
                                       0, now, None) for qid, a in sorted(answers.items())])
    except sqlite3.Error as exc:
        raise UserError(f"could not write run {run_id!r}: {exc}", str(db),
                        "close other programs using the harness db and import again") from None
    finally:
        conn.close()
    summary.answered = len(answers)
    if replace and replaced:
        summary.notes.append(f"replaced {replaced} earlier answers of {run_id}")


def _signals_path(workspace: Path) -> Path | str:
    """The signal store the workspace's config names (``paths.signals_db``), else the default:
    stale diagnoses must go from the store the runs actually use."""
    config = workspace / CONFIG_FILE
    if config.is_file():
        try:
            rel = (yaml.safe_load(config.read_text(encoding="utf-8")) or {}).get(
                "paths", {}).get("signals_db")
        except (yaml.YAMLError, UnicodeDecodeError, AttributeError):
            rel = None
        if isinstance(rel, str) and rel:
            return rel if is_store_url(rel) else (workspace / rel).resolve()
    return workspace / SIGNALS_DB


def _delete_signals(signals: Path | str, run_id: str, summary: ImportSummary) -> None:
    """Delete the run's signal rows and leases (nothing to do when there is no store yet)."""
    gone = delete_run_signals(signals, run_id)
    if gone is not None:
        summary.notes.append(f"deleted {gone} signal row(s) of {run_id}")


def _check_matches(benchmark: Benchmark, other: Benchmark, source: Path) -> None:
    """Refuse a file that is not of this workspace's benchmark (counts and examples)."""
    unknown = sorted(set(other.by_id) - set(benchmark.by_id))
    if unknown:
        raise InputError(f"{len(unknown)} of {len(other.by_id)} question ids are not in the "
                         f"workspace's benchmark (e.g. {', '.join(unknown[:5])})", str(source),
                         "import results of the same benchmark, or start a new workspace")
    changed = sorted(q for q in other.by_id if _content(other.by_id[q])
                     != _content(benchmark.by_id[q]))
    if changed:
        raise InputError(f"{len(changed)} question(s) have another answer or other options "
                         "than in the "
                         f"workspace's benchmark (e.g. {', '.join(changed[:5])})", str(source),
                         "import results of the same benchmark version")


def _content(q: Any) -> tuple[str, tuple[str, ...]]:
    return q.answer, tuple(" ".join(o.split()).casefold() for o in q.options)


def _check_missing(missing: set[str], total: int, source: Path, partial: bool) -> None:
    if missing and not partial:
        shown = ", ".join(sorted(missing)[:5])
        raise InputError(f"{len(missing)} of {total} benchmark questions have no answer in the "
                         f"file (e.g. {shown})", str(source),
                         "pass --partial to import a run that answers only some questions")
