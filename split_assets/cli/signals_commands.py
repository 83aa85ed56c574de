"""The signal store: ``split-assets signals copy --to URL`` (the config's store into
PostgreSQL)."""

from __future__ import annotations

import argparse
from pathlib import Path

from split_assets.cli.arguments import Subcommands, actions, command, config_arg
from split_assets.cli.terminal import say
from split_assets.errors import UserError


def add_signals(sub: Subcommands) -> None:
    p = command(sub, "signals", "manage the signal store")
    k = command(actions(p), "copy", "copy the config's signal store (diagnoses, cache, "
                                    "telemetry, review labels) into PostgreSQL", handle_copy)
    k.add_argument("--to", required=True, metavar="URL",
                   help="postgresql://user@host/database (no password: PGPASSWORD or ~/.pgpass)")
    config_arg(k)


def handle_copy(args: argparse.Namespace) -> int:
    from split_assets.settings import load_config
    from split_assets.store.opening import open_store
    from split_assets.store.signals_pg import check_store_url, is_store_url
    from split_assets.store.store_copy import copy_store

    to: str = args.to
    check_store_url(to, "--to")
    loaded = load_config(args.config)
    source_location = loaded.paths.signals_db
    if source_location == to:
        raise UserError("the source and the target are the same store", "--to",
                        "name another database")
    if not is_store_url(source_location) and not Path(source_location).is_file():
        raise UserError(f"signal store not found: {source_location}", "paths.signals_db",
                        "nothing to copy: run 'split-assets run' first, or pass --config")
    # the source is opened as a run would (a store of an earlier release is migrated first)
    with open_store(source_location) as source, open_store(to) as target:
        summary = copy_store(source, target)
    print(summary.line(to))
    say(f"to use it, set paths.signals_db: {to} in {loaded.path}")
    return 0
