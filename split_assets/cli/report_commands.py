"""``split-assets report``: the split card of the config's frozen split (``report/``)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from split_assets.cli.arguments import Subcommands, command, config_arg
from split_assets.cli.terminal import benchmark_name, open_session, say


def add_report(sub: Subcommands) -> None:
    p = command(sub, "report", "the split card: an HTML page and a Markdown file with "
                               "figures of the frozen split, its judge and its ledger",
                handle_report)
    p.add_argument("--out", type=Path, help="the folder to write (default: report/ in the "
                                            "split's folder, beside pools.json)")
    config_arg(p)


def handle_report(args: argparse.Namespace) -> int:
    from split_assets.evaluation.shared_budget import budget_now
    from split_assets.importing.provenance import read_provenance
    from split_assets.report.card_data import gather
    from split_assets.report.card_render import write_card

    s = open_session(args.config)
    partition = s.partition
    partition.frozen_manifest()  # nothing frozen: one line naming the command that freezes
    diag = s.loaded.config.diag
    price = diag.openai.price if diag.judge == "openai" else None
    baseline = partition.frozen_manifest()["input_digests"]["baseline_predictions"]
    card = gather(s.inputs, partition, s.problem(), price, _agreement(s),
                  budget_now(s.loaded.path, s.loaded.config.evaluation.test_looks_max, baseline,
                             partition.split_id),
                  read_provenance(s.loaded.paths.harness_db))
    out: Path = args.out or report_dir(partition.out_dir)
    written = write_card(card, out, benchmark_name(s))
    print(f"card={written[0]}")
    print(f"markdown={written[1]}")
    print(f"latex={written[2]}")
    print(f"pool_ids={written[3]}")
    print(f"figures={len(written) - 4}")
    say(f"wrote the split card of {partition.split_id} ({partition.key}) to {out}")
    return 0


def report_dir(split_folder: Path) -> Path:
    return split_folder / "report"


def _agreement(s: Any) -> dict[str, Any] | None:
    """diag.compare_with: kappa of this judge against that fingerprint, when measurable."""
    from split_assets.errors import UserError
    from split_assets.evaluation.judges import compare_fingerprints

    other = s.loaded.config.diag.compare_with
    if other is None:
        return None
    try:
        tier = compare_fingerprints(s.partition, s.partition.key, other).tier.overall
    except UserError as exc:
        return {"line": f"not computed against {other}: {exc.line()}"}
    return {"line": f"Cohen's kappa on tiers {tier.kappa:.3f} [{tier.low:.3f}, "
                    f"{tier.high:.3f}] (95 %, bootstrap over videos) against {other}, "
                    f"{tier.n} answers"}
