"""Typed errors of the core. The CLI turns them into one line on stderr and an exit code."""

from __future__ import annotations


class SplitAssetsError(Exception):
    """Base of every expected error: rendered as ``error: <what> (<where>): <how to fix>``."""

    exit_code = 1

    def __init__(self, what: str, where: str = "", fix: str = "") -> None:
        self.what = what
        self.where = where
        self.fix = fix
        super().__init__(self.line())

    def line(self) -> str:
        """The one-line rendering shown to users."""
        text = self.what
        if self.where:
            text += f" ({self.where})"
        if self.fix:
            text += f": {self.fix}"
        return text


class UserError(SplitAssetsError):
    """Something the user must fix in config, input or environment (exit 2)."""

    exit_code = 2


class ConfigError(UserError):
    """The config file is missing, malformed or invalid."""


class InputError(UserError):
    """An input (benchmark, harness db, trees, skills, prompts) is missing or malformed."""


class InfeasibleSplitError(UserError):
    """The floors or epsilon of the split cannot be met."""


class RunFailure(SplitAssetsError):
    """A run failed for a reason other than user input (exit 1)."""

    exit_code = 1
