# PYTHON_ARGCOMPLETE_OK
"""``split-assets``: one module per command group (``cli/*_commands.py``, each with its parsers
and handlers). Expected errors are one line on stderr (``error: <what> (<where>): <how to
fix>``) with exit 2 for what the user must fix (config, input, environment), exit 1 for a run
that failed otherwise, and 130 for Ctrl-C."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from split_assets.errors import SplitAssetsError, environment_error


def main(argv: Sequence[str] | None = None, settle: bool = False) -> int:
    """Run one command; its exit code. ``settle`` (the console script): once the outcome is
    printed, a late Ctrl-C is ignored, so the process never dies of the signal."""
    from split_assets.lib import interrupts

    with interrupts.watch():  # a Ctrl-C is never lost (lib/interrupts.py)
        try:
            return _main(argv)
        finally:
            if settle:
                interrupts.settle()


def entry() -> None:
    """The ``split-assets`` console script."""
    from split_assets.lib import gc_pause

    gc_pause.pause()  # until the command's work starts (lib/gc_pause.py)
    try:
        code = main(settle=True)
    except KeyboardInterrupt:  # in the instant between the outcome and settling
        code = _interrupted()
    # all is written: skip the interpreter's last collection over Dagster's objects (0.8 s)
    gc_pause.freeze()
    sys.exit(code)


def _main(argv: Sequence[str] | None) -> int:
    from split_assets.lib import interrupts

    try:
        parser = build_parser()
        if "_ARGCOMPLETE" in os.environ:  # the shell asks for completions (README)
            import argcomplete

            argcomplete.autocomplete(parser)
        args = parser.parse_args(argv)
        if not getattr(args, "keeps_gc_paused", False):  # run: resumed before the run starts
            from split_assets.lib import gc_pause

            gc_pause.resume()
        return args.func(args)
    except SplitAssetsError as exc:
        # whatever failed after a Ctrl-C failed because of it: the interrupt is the outcome
        return _interrupted() if interrupts.seen() else _fail(exc)
    except KeyboardInterrupt:
        return _interrupted()
    except Exception as exc:
        if interrupts.seen() or interrupts.is_interrupt(exc):
            return _interrupted()
        from split_assets.split.impossible import SplitImpossible

        if isinstance(exc, SplitImpossible):  # the split core's data, as_user_error once
            from split_assets.app.messages import as_user_error

            return _fail(as_user_error(exc))
        from split_assets.orchestration.instance import instance_storage_error

        mapped = environment_error(exc) or instance_storage_error(exc)
        if mapped is None:
            raise
        return _fail(mapped)


def build_parser() -> argparse.ArgumentParser:
    """Every command, in the order ``split-assets --help`` lists them."""
    from split_assets.cli import (
        evaluation_commands,
        file_commands,
        judge_commands,
        report_commands,
        signals_commands,
        split_commands,
        workspace_commands,
    )
    from split_assets.cli.arguments import Parser, actions

    parser = Parser(
        prog="split-assets",
        description="Frozen, reproducible, outcome-driven train/validation/test splits.")
    from split_assets.lib.package_version import package_version

    parser.add_argument("--version", action="version",
                        version=f"split-assets {package_version()}")
    sub = actions(parser, dest="command", metavar="COMMAND")
    for add in (split_commands.add_run, split_commands.add_fingerprint,
                split_commands.add_verify, report_commands.add_report,
                split_commands.add_partitions,
                judge_commands.add_agreement,
                judge_commands.add_review, file_commands.add_import,
                file_commands.add_export_signals, file_commands.add_export,
                signals_commands.add_signals, workspace_commands.add_demo,
                evaluation_commands.add_ledger, workspace_commands.add_workspace,
                evaluation_commands.add_compare, evaluation_commands.add_feedback,
                judge_commands.add_judge):
        add(sub)
    return parser


def _interrupted() -> int:
    from split_assets.errors import interrupted  # nothing more to import (errors.py)
    from split_assets.lib import interrupts

    return _fail(interrupted(interrupts.terminated()))


def _fail(exc: SplitAssetsError) -> int:
    print(f"error: {exc.line()}", file=sys.stderr, flush=True)
    return exc.exit_code
