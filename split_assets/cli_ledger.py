"""``split-assets ledger``, and the ledger rows a command that shows an evaluation writes
(``data/ledger.py``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from split_assets.partition import Partition


def record_looks(partition: Partition, report: dict, source: str) -> list[str]:
    """One ledger row per pool the report showed; a line per pool for the user."""
    from split_assets.evaluation.report import shown_line

    lines = []
    with partition.store() as store:
        for pool, entry in report["pools"].items():
            if "vs_baseline" not in entry:
                continue
            look = store.record_look(report["split_id"], pool, report["candidate"],
                                     entry["answers_digest"], source, entry["vs_baseline"],
                                     shown_line(entry))
            lines.append(f"ledger: {pool} look at {report['candidate']}"
                         + (" (a repeat: these answers were evaluated before)"
                            if look.is_repeat else ""))
    return lines


def ledger(config: Path | None, pool: str | None, as_json: bool) -> int:
    """``split-assets ledger``: every evaluation recorded on the config's split."""
    from split_assets.session import Session

    partition = Session.open(config).partition
    with partition.store(read_only=True) as store:
        looks = store.looks(partition.split_id, pool)
    if as_json:
        print(json.dumps([look.as_dict() for look in looks], indent=1, sort_keys=True))
        return 0
    for look in looks:
        print(f"{look.created_at}  {look.pool:<10}  {look.source:<8}  {look.run_id}  "
              f"{'repeat' if look.is_repeat else 'new   '}  {look.shown}")
    print(f"{len(looks)} evaluation(s) of split {partition.split_id}"
         + (f" on {pool}" if pool else "") + f" in {partition.loaded.paths.signals_db}",
          file=sys.stderr)
    return 0


def feedback_of(config: Path | str | None, candidate: str) -> dict:
    """The Ladder's feedback on the validation pool for ``candidate`` (``split-assets
    feedback``; ``split_assets.feedback`` for a loop in Python), recorded in the ledger."""
    from split_assets.evaluation.feedback import feedback
    from split_assets.session import Session

    s = Session.open(config)
    with s.partition.store() as store:
        return feedback(s.inputs, s.partition, candidate, store,
                        s.loaded.config.evaluation.feedback_budget)


def feedback_command(config: Path | None, candidate: str, as_json: bool) -> int:
    result = feedback_of(config, candidate)
    if as_json:
        print(json.dumps(result, indent=1, sort_keys=True))
    else:
        print(f"leaderboard_accuracy={result['leaderboard_accuracy']}\n"
              f"moved={str(result['moved']).lower()}\n"
              f"significant={str(result['significant']).lower()}\n"
              f"repeat={str(result['repeat']).lower()}\n"
              f"submissions={result['submissions']}")
    if not result["within_budget"]:
        print(f"note: {result['submissions']} submissions exceed evaluation.feedback_budget "
              f"{result['budget']}: 'significant' is no longer valid for this loop (raise the "
              "budget before the loop starts, not after)", file=sys.stderr)
    return 0
