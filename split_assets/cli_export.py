"""The export commands: ``split-assets export-signals`` (the train pool's diagnoses) and
``split-assets export lmms-eval`` (a pool as an lmms-eval task)."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from split_assets.errors import UserError


def dispatch(args: Any) -> int:
    if args.command == "export-signals":
        return export_signals(args.pool, args.out, args.config)
    return export_lmms_eval(args)


def export_signals(pool: str, out: Path, config: Path | None) -> int:
    """``split-assets export-signals``: the train pool's diagnoses as JSONL."""
    from split_assets.evaluation.report import load_pools
    from split_assets.lib.canonical import atomic_write_bytes

    if pool != "train":
        raise UserError(f"--pool {pool} refused: only the train pool's diagnoses may be "
                        "exported", "--pool", "the evolution loop must never read validation "
                                              "or test diagnoses; use --pool train")
    if out.is_dir():
        raise UserError(f"--out names a folder: {out}", "--out",
                        "name the JSONL file to write, e.g. train_signals.jsonl")
    from split_assets.session import Session

    partition = Session.open(config).partition
    doc = load_pools(partition)
    train = set(doc["pools"]["train"])
    rows = [r for r in partition.rows(required=True) if r.question_id in train]
    lines = [json.dumps({**asdict(row), "pool": "train"}, sort_keys=True, ensure_ascii=False)
             for row in rows]
    atomic_write_bytes(out, ("\n".join(lines) + ("\n" if lines else "")).encode("utf-8"))
    print(f"wrote {len(lines)} diagnoses of the train pool ({len(doc['videos']['train'])} "
          f"videos, split {doc['split_id']}, {partition.key}) to {out}")
    return 0


def export_lmms_eval(args: Any) -> int:
    """``split-assets export lmms-eval --pool P``: the pool as an lmms-eval task folder
    (``evaluation/harness_tasks.py``); exporting test is a look at test."""
    from split_assets.evaluation.harness_tasks import export_pool_task
    from split_assets.session import Session

    s = Session.open(args.config)
    for line in export_pool_task(s.inputs, s.partition, args.pool, args.out,
                                 args.spend_test_look, args.task):
        print(line)
    return 0
