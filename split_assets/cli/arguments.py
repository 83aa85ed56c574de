"""The ``split-assets`` parser: the project's one-line usage errors (``error: <what>
(<command>): see '<command> --help'``, exit 2), and the helpers each command group's module adds
its own parsers with (:func:`command` names the handler, ``set_defaults(func=...)``);
``split_assets.cli`` lists the commands and calls the handler the arguments chose."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn, Protocol

from split_assets.errors import UserError

CONFIG_HELP = "config file (default: $SPLIT_ASSETS_CONFIG or config/video_split.yaml)"
Handler = Callable[[argparse.Namespace], int]


class Subcommands(Protocol):
    """What ``add_subparsers`` returns, as the command modules use it."""

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser: ...


class Parser(argparse.ArgumentParser):
    """argparse with the project's one-line errors: a usage error (unknown argument, missing
    required one, invalid choice or value) is ``error: <what> (<command>): see '<command>
    --help'``, exit 2, without the usage block; ``--help`` is argparse's own."""

    def error(self, message: str) -> NoReturn:
        raise usage_error(message, self.prog)

    def parse_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                   namespace: argparse.Namespace | None = None) -> argparse.Namespace:
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:  # named at the deepest command given, which is the one that refused them
            raise usage_error(f"unrecognized arguments: {' '.join(extras)}",
                              getattr(parsed, "command_prog", self.prog))
        return parsed


def usage_error(message: str, prog: str) -> UserError:
    return UserError(message, prog, f"see '{prog} --help'")


def command(sub: Subcommands, name: str, help: str, func: Handler | None = None,
            **defaults: Any) -> argparse.ArgumentParser:
    """A (sub)command's parser; ``func`` handles it (None: a group whose actions do). Each
    parser records its own name, so an unknown argument is refused at the deepest command."""
    parser = sub.add_parser(name, help=help)
    parser.set_defaults(command_prog=parser.prog, **defaults)
    if func is not None:
        parser.set_defaults(func=func)
    return parser


def actions(parser: argparse.ArgumentParser, dest: str = "action",
            metavar: str = "ACTION") -> Subcommands:
    """The subcommands of a command group (``review export``, ``import videomme``...)."""
    return parser.add_subparsers(dest=dest, required=True, metavar=metavar)


def config_arg(parser: argparse.ArgumentParser, required: bool = False,
               help: str = CONFIG_HELP) -> None:
    parser.add_argument("--config", type=Path, required=required, help=help)
