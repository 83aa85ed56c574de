"""The files evaluation harnesses write, read as records with where each came from: JSONL
lines (lmms-eval's ``--log_samples``), spreadsheet tables (VLMEvalKit's predictions), a line's
raw response and a table's cells. Both harness importers (``videomme_harnesses.py`` and
``profiled_harnesses.py``) read through these."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from split_assets.errors import InputError, UserError


def read_jsonl(path: Path) -> list[tuple[str, Any]]:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise InputError("the file is not UTF-8 text", str(path), "save it as UTF-8") from None
    out = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            where = f"{path}:{lineno}"
            try:
                out.append((where, json.loads(line)))
            except json.JSONDecodeError as exc:
                raise InputError(f"invalid JSON line: {exc.msg}", where,
                                 "fix or remove the line") from None
    if not out:
        raise InputError("the samples file is empty", str(path), "pass a non-empty file")
    return out


def response_of(record: dict, where: str) -> str:
    """``filtered_resps[0]`` (a plain string since v0.7), else ``resps[0][0]``."""
    for name in ("filtered_resps", "resps"):
        value = record.get(name)
        while isinstance(value, list):
            value = value[0] if value else ""
        if isinstance(value, str):
            return value
        if value is not None:
            raise InputError(f"{name} is not text", where, "pass lmms-eval's samples file")
    raise InputError("line has neither filtered_resps nor resps", where,
                     "run lmms-eval with --log_samples")


VIDEOMME_COLUMNS = ("video", "question", "answer", "prediction")


def read_table(path: Path, required: tuple[str, ...] = VIDEOMME_COLUMNS,
           what: str = "Video-MME") -> list[tuple[int, dict[str, Any]]]:
    """(spreadsheet row number, row) of an xlsx / tsv / csv table (header on row 1)."""
    if not path.is_file():
        raise UserError(f"results table not found: {path}", "--results",
                        "pass VLMEvalKit's <model>_Video-MME_*.xlsx (or .tsv / .csv)")
    try:
        import pandas as pd
    except ImportError:
        raise UserError("reading VLMEvalKit tables needs pandas", "split-assets[import]",
                        "pip install 'split_assets[import]'") from None
    suffix = path.suffix.lower()
    try:
        if suffix == ".xlsx":
            frame = pd.read_excel(path, dtype=str, keep_default_na=False)
        elif suffix in (".tsv", ".csv"):
            frame = pd.read_csv(path, sep="\t" if suffix == ".tsv" else ",", dtype=str,
                                keep_default_na=False)
        else:
            raise UserError(f"{path.name}: not an .xlsx, .tsv or .csv table", "--results",
                            "pass VLMEvalKit's prediction table")
    except ImportError as exc:
        raise UserError(f"reading {suffix} needs {exc.name or 'openpyxl'}",
                        "split-assets[import]", "pip install 'split_assets[import]'") from None
    except (ValueError, OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read the table: {' '.join(str(exc).split())[:160]}",
                         str(path), "pass the table VLMEvalKit wrote") from None
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise InputError(f"missing column(s) {', '.join(missing)}", f"{path} row 1",
                         f"pass VLMEvalKit's {what} prediction table")
    return [(i + 2, row) for i, row in enumerate(frame.to_dict("records"))]


def cell(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return str(value)
