"""The version is set once (``pyproject.toml``): the package, ``split-assets --version`` and the
changelog's top entry all name it."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from release_notes import CHANGELOG, CHECKOUT, top_release

import split_assets
from split_assets.lib.package_version import package_version


def test_changelog_top_entry_is_the_package_version() -> None:
    version, date = top_release()
    assert version == split_assets.__version__ == package_version()
    pyproject = tomllib.loads((CHECKOUT / "pyproject.toml").read_text(encoding="utf-8"))
    assert pyproject["project"]["version"] == version  # the one place it is set
    assert re.fullmatch(r"\d+\.\d+\.\d+", version)  # a release, not a development version
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", date)


def test_changelog_is_keep_a_changelog() -> None:
    text = CHANGELOG.read_text(encoding="utf-8")
    assert text.startswith("# Changelog\n")
    assert "https://keepachangelog.com/en/1.1.0/" in text
    kinds = set(re.findall(r"^### (\w+)$", text, re.MULTILINE))
    assert kinds and kinds <= {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}


def test_version_option_prints_the_version(capsys: pytest.CaptureFixture[str]) -> None:
    from split_assets.cli import main

    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out == f"split-assets {top_release()[0]}\n"


def test_checkout_version_reads_pyproject(tmp_path: Path) -> None:
    """A source checkout that was never installed reads its pyproject.toml; a file of another
    project, or none, is 'unknown'."""
    assert split_assets.checkout_version(CHECKOUT / "pyproject.toml") == top_release()[0]
    other = tmp_path / "pyproject.toml"
    other.write_text('[project]\nname = "other"\nversion = "9.9.9"\n', encoding="utf-8")
    assert split_assets.checkout_version(other) == "unknown"
    assert split_assets.checkout_version(tmp_path / "missing.toml") == "unknown"


@pytest.mark.slow
def test_console_script_prints_the_version(tmp_path: Path) -> None:
    """The installed console script, started from a folder outside the checkout."""
    script = Path(sys.executable).with_name("split-assets")
    out = subprocess.run([str(script), "--version"], cwd=tmp_path, capture_output=True,
                         text=True, timeout=120, check=True).stdout
    assert out == f"split-assets {top_release()[0]}\n"
