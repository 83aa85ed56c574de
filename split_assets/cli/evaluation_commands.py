"""The evaluation commands: ``split-assets compare``, ``ledger`` and ``feedback`` (each
evaluation shown is a row of the ledger, ``store/ledger.py``)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from split_assets.cli.arguments import Subcommands, command, config_arg
from split_assets.cli.terminal import open_session


def add_compare(sub: Subcommands) -> None:
    p = command(sub, "compare", "compare a candidate run with the baseline on the frozen "
                                "validation pool, or on test (--pool test: a look)",
                handle_compare)
    p.add_argument("--candidate", required=True, help="the candidate run id (in the harness db)")
    p.add_argument("--control", help="a fresh re-run of the baseline agent (default: "
                                     "evaluation.control_run)")
    config_arg(p)
    p.add_argument("--pool", action="append", choices=("validation", "test"),
                   help="compare this pool (repeatable; default validation only: test is "
                        "looked at only when named)")
    p.add_argument("--spend-test-look", action="store_true",
                   help="look at test beyond evaluation.test_looks_max (no claim holds for it)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")


def add_feedback(sub: Subcommands) -> None:
    p = command(sub, "feedback", "submit a candidate to the Ladder on validation: the "
                                 "leaderboard's score and a budgeted significance flag",
                handle_feedback)
    p.add_argument("--candidate", required=True, help="the run id of the candidate")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    config_arg(p)


def add_ledger(sub: Subcommands) -> None:
    p = command(sub, "ledger", "every evaluation of a run on the config's frozen pools (what "
                               "was looked at, and when)", handle_ledger)
    p.add_argument("--pool", choices=("validation", "test"), help="one pool only")
    p.add_argument("--json", action="store_true", help="print the rows as JSON")
    config_arg(p)


def handle_compare(args: argparse.Namespace) -> int:
    return compare(args.candidate, args.control, args.config, args.pool, args.json,
                   args.spend_test_look)


def handle_ledger(args: argparse.Namespace) -> int:
    return ledger(args.config, args.pool, args.json)


def compare(candidate: str, control: str | None, config: Path | None,
            pools: list[str] | None, as_json: bool, spend_test_look: bool = False) -> int:
    """``split-assets compare``: the candidate against the baseline on validation, and on
    test when named (a look, within ``evaluation.test_looks_max`` unless spent on purpose)."""
    from split_assets.evaluation.claims import record
    from split_assets.evaluation.comparison import VALIDATION_ONLY, compare_runs, text
    from split_assets.split.layout import EVALUATED_POOLS

    if spend_test_look and "test" not in (pools or ()):
        from split_assets.errors import UserError

        raise UserError("--spend-test-look without --pool test", "split-assets compare",
                        "add --pool test to spend a look at test on purpose, or drop the flag")
    s = open_session(config)
    evaluation = s.loaded.config.evaluation
    where = "--control"
    if control is None and evaluation.control_run is not None:
        control, where = evaluation.control_run, "evaluation.control_run"
    chosen = tuple(p for p in EVALUATED_POOLS if p in (pools or VALIDATION_ONLY))
    report = compare_runs(s.inputs, s.partition, candidate, control, chosen,
                          control_where=where)
    # recorded (or refused, then nothing is written or shown) before anything is shown
    looks = record(s.partition, report, "compare", evaluation.test_looks_max, spend_test_look)
    print(json.dumps(report, indent=1, sort_keys=True) if as_json else text(report))
    if looks:
        print("; ".join(looks), file=sys.stderr)
    return 0


def ledger(config: Path | None, pool: str | None, as_json: bool) -> int:
    """``split-assets ledger``: every evaluation recorded on the config's split, and the rows
    of the baseline's other splits whose test pools were looked at (a test budget belongs to
    the benchmark and baseline, not to one split)."""
    from split_assets.evaluation.shared_budget import (
        WORKSPACE,
        copied,
        published_rows,
        workspace_of,
    )
    from split_assets.sources.harness_db import predictions_digest

    s = open_session(config)
    partition = s.partition
    here = workspace_of(partition.config_path)
    baseline = predictions_digest(s.inputs.predictions)
    # other workspaces of the baseline on this instance: their looks count here too
    elsewhere = copied(published_rows(baseline), here) if pool != "validation" else []
    with partition.store(read_only=True) as store:
        splits = [partition.split_id] + sorted(
            ({x.split_id for x in store.exposures(baseline)}
             | {look.split_id for look in elsewhere}) - {partition.split_id})
        own = store.looks(partition.split_id, pool)
        others = [look for split in splits[1:] for look in store.looks(split, pool)]
    # a look once: as the row copied into this split's ledger (or this store), if it was
    mine = {look.answers_digest for look in own if look.pool == "test"}
    others = [look for look in others if not (look.pool == "test" and look.answers_digest in mine)]
    have = {(look.split_id, look.answers_digest) for look in own + others}
    looks = own + others + [look for look in elsewhere if look.answers_digest not in mine
                            and (look.split_id, look.answers_digest) not in have]
    looks.sort(key=lambda look: (look.created_at, splits.index(look.split_id)))
    if as_json:
        print(json.dumps([{**look.as_dict(), "workspace": look.statistic.get(WORKSPACE, here)}
                          for look in looks], indent=1, sort_keys=True))
        return 0
    width = max((len(look.run_id) for look in looks), default=0)
    for look in looks:
        print(f"{look.created_at}  {look.split_id}  {look.pool:<10}  {look.source:<8}  "
              f"{look.run_id:<{width}}  {'repeat' if look.is_repeat else 'new   '}  "
              f"{look.shown}  [workspace {look.statistic.get(WORKSPACE, 'this one')}]")
    more = f" and {len(splits) - 1} other split(s) of its baseline" if splits[1:] else ""
    print(f"{len(looks)} evaluation(s) of split {partition.split_id}{more}"
          + (f" on {pool}" if pool else "") + f" in {partition.loaded.paths.signals_db}",
          file=sys.stderr)
    return 0


def handle_feedback(args: argparse.Namespace) -> int:
    from split_assets.app.session import feedback_of

    result = feedback_of(args.config, args.candidate)
    if args.json:
        print(json.dumps(result, indent=1, sort_keys=True))
    else:
        print(f"leaderboard_accuracy={result['leaderboard_accuracy']}\n"
              f"moved={str(result['moved']).lower()}\n"
              f"significant={str(result['significant']).lower()}\n"
              f"repeat={str(result['repeat']).lower()}\n"
              f"submitted={str(result['submitted']).lower()}\n"
              f"submissions={result['submissions']}")
    if not result["within_budget"]:
        print(f"note: {result['submissions']} submissions exceed evaluation.feedback_budget "
              f"{result['budget']}: 'significant' is no longer valid for this loop (raise the "
              "budget before the loop starts, not after)", file=sys.stderr)
    return 0
