"""Workspaces: ``split-assets workspace add|list`` (what the code location serves) and ``demo``
(build the sample workspace, declare it and run it)."""

from __future__ import annotations

import argparse
from pathlib import Path

from split_assets.cli.arguments import Subcommands, actions, command, config_arg
from split_assets.cli.terminal import say
from split_assets.errors import UserError

DEFAULT_DEMO_DIR = "demo-workspace"


def add_demo(sub: Subcommands) -> None:
    p = command(sub, "demo", "build the sample workspace, declare it and run it", handle_demo,
                keeps_gc_paused=True)
    p.add_argument("--dir", type=Path, default=Path(DEFAULT_DEMO_DIR),
                   help=f"where to build it (default: {DEFAULT_DEMO_DIR}/)")
    p.add_argument("--name", default="demo",
                   help="the workspace's name in Dagster, its asset-key prefix (default: demo)")
    p.add_argument("--shape", choices=("videomme", "longvideobench", "mvbench"),
                   default="videomme", help="the benchmark it is shaped like (default: "
                   "videomme; the others from public aggregates, answer_only judge)")
    p.add_argument("--references", type=int, default=0, metavar="N",
                   help="videomme shape: N generated reference runs (a latent-ability "
                        "population calibrated to public Video-MME runs) balanced in test "
                        "(video_split.balance_runs); default 0")


def add_workspace(sub: Subcommands) -> None:
    p = command(sub, "workspace", "declare workspaces for the code location (dg dev)")
    kinds = actions(p)
    k = command(kinds, "add", "declare a config as a workspace: writes "
                              "$SPLIT_ASSETS_WORKSPACES/NAME/defs.yaml", handle_workspace_add)
    k.add_argument("--name", required=True, help="its asset-key prefix (e.g. videomme)")
    config_arg(k, required=True, help="the workspace's config file")
    command(kinds, "list", "the declared workspaces: name, config, defs.yaml",
            handle_workspace_list)


def handle_demo(args: argparse.Namespace) -> int:
    """Build the sample workspace in ``--dir`` (shaped like ``--shape``), declare it as
    workspace ``--name`` (so ``make ui`` shows it) and run it."""
    from split_assets.app.declared_workspaces import declare, declared_as
    from split_assets.cli.split_commands import run
    from split_assets.demo import build_shaped

    directory: Path = args.dir
    if args.references < 0 or (args.references and args.shape != "videomme"):
        raise UserError(f"--references {args.references} with --shape {args.shape}",
                        "--references", "pass 0 or more, with the videomme shape")
    declared_as(args.name, directory / "video_split.yaml")  # a taken name: refused first
    config, built = build_shaped(directory, args.shape, args.references)
    say(built)
    where, new = declare(args.name, config)
    if new:
        say(f"declared workspace {args.name!r} in {where}")
    return run(config)


def handle_workspace_add(args: argparse.Namespace) -> int:
    from split_assets.app.declared_workspaces import declare

    where, new = declare(args.name, args.config)
    print(f"{'declared' if new else 'already declared:'} workspace {args.name} "
          f"({args.config.absolute()}) in {where}")
    return 0


def handle_workspace_list(args: argparse.Namespace) -> int:
    from split_assets.app.declared_workspaces import declared, workspaces_dir

    found = declared()
    if not found:
        say(f"no workspace declared in {workspaces_dir()}")
    for d in found:
        print(f"{d.name}\t{d.config}\t{d.defs_yaml}")
    return 0
