"""Reference runs on the on-ramp (issue 45): ``split-assets import ... --reference FILE``
(repeatable, one file per run, in the command's own format) imports other models' runs beside
the baseline in one command, each as role reference (``diag.reference_runs``: T1/T2;
``video_split.balance_runs``: test representative for models like them).

Ids: ``--reference-id`` in the same order, else derived from the file -- lmms-eval names every
file ``<date>_samples_<task>.jsonl`` inside a folder named for the model, so its folder; any
other file its name -- made unique among the command's references; an id a run of the
workspace has (the same reference imported again) is refused, never silently copied. The
command is one unit: when any file is refused, the workspace is left as it was before it."""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from split_assets.errors import UserError
from split_assets.importing.workspace_setup import HARNESS_DB
from split_assets.sources.config_file import CONFIG_FILE
from split_assets.sources.harness_db import run_ids

LMMS_SAMPLES = re.compile(r"^\d{8}_\d{6}_samples_.+\.jsonl$|_samples_.+\.jsonl$")


def derived_id(kind: str, path: Path) -> str:
    """A reference's id from its file: lmms-eval's model folder, else the file's name."""
    if kind == "lmms-eval" and LMMS_SAMPLES.search(path.name) and path.parent.name not in (
            "", "."):
        return path.parent.name
    return path.stem


def reference_plan(kind: str, files: list[Path], ids: list[str], run_id: str,
                   workspace: Path) -> list[tuple[Path, str]]:
    """(file, run id) of each ``--reference``, refused in one line before anything is read."""
    if len(ids) > len(files):
        raise UserError(f"--reference-id is given {len(ids)} times for {len(files)} "
                        "--reference file(s)", "--reference-id",
                        "give at most one --reference-id per --reference, in the same order")
    for i, path in enumerate(files):
        if not path.is_file():
            raise UserError(f"the reference file {path} does not exist", "--reference",
                            "pass the results file of another run of the same benchmark")
        if path.resolve() in {f.resolve() for f in files[:i]}:
            raise UserError(f"the reference file {path} is given twice", "--reference",
                            "give each reference run once")
    db = workspace / HARNESS_DB
    present = set(run_ids(db)) if db.is_file() else set()
    taken = present | {run_id}
    plan: list[tuple[Path, str]] = []
    for i, path in enumerate(files):
        rid = ids[i] if i < len(ids) else derived_id(kind, path)
        if rid in present or (i < len(ids) and rid in taken):  # the same reference again,
            # most likely: never a silent second copy
            raise UserError(f"reference run id {rid!r} (of {path}) is taken by a run "
                            f"{'of the workspace' if rid in present else 'of this command'}",
                            "--reference-id", "give the reference a run id of its own with "
                            "--reference-id, in the order of the --reference files")
        base, n = rid, 2
        while rid in taken:  # two files of this command that derive one id
            rid, n = f"{base}-{n}", n + 1
        taken.add(rid)
        plan.append((path, rid))
    return plan


@contextmanager
def import_transaction(workspace: Path, enabled: bool = True) -> Iterator[None]:
    """Everything an import of several runs writes to ``workspace`` (the harness db, the
    config, the benchmark) is undone when any of them fails: a new workspace is removed, an
    existing one gets its files back."""
    if not enabled:
        yield
        return
    existed = workspace.exists()
    saved = Path(tempfile.mkdtemp(prefix=".import-", dir=workspace.parent
                                  if workspace.parent.is_dir() else None))
    kept = [name for name in (HARNESS_DB, CONFIG_FILE, "questions")
            if (workspace / name).exists()]
    try:
        for name in kept:
            source = workspace / name
            if source.is_dir():
                shutil.copytree(source, saved / name)
            else:
                shutil.copy2(source, saved / name)
        try:
            yield
        except BaseException:
            if not existed:
                shutil.rmtree(workspace, ignore_errors=True)
            else:
                _restore(workspace, saved, kept)
            raise
    finally:
        shutil.rmtree(saved, ignore_errors=True)


def _restore(workspace: Path, saved: Path, kept: list[str]) -> None:
    for name in (HARNESS_DB, CONFIG_FILE, "questions"):
        target = workspace / name
        if name not in kept:
            if target.is_dir():
                shutil.rmtree(target, ignore_errors=True)
            elif target.exists():
                target.unlink()
            continue
        if target.is_dir():
            shutil.rmtree(target, ignore_errors=True)
        if (saved / name).is_dir():
            shutil.copytree(saved / name, target)
        else:
            shutil.copy2(saved / name, target)
