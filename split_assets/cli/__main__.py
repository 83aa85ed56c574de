"""``python -m split_assets.cli``: the console script."""

from split_assets.cli import entry

entry()
