"""Shell completion (argcomplete): what bash gets back for a partial command line, through the
installed `split-assets` script, exactly as `register-python-argcomplete split-assets` wires it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.parametrize(("line", "expected"), [
    ("split-assets rev", {"review"}),
    ("split-assets review ", {"export", "import", "-h", "--help"}),
    ("split-assets review export --s", {"--stratify", "--show-judge", "--seed"}),
    ("split-assets run --dry", {"--dry-run"}),
])
def test_completions(tmp_path: Path, line: str, expected: set[str]) -> None:
    out = tmp_path / "completions"
    script = Path(sys.executable).parent / "split-assets"
    env = dict(os.environ, _ARGCOMPLETE="1", COMP_LINE=line, COMP_POINT=str(len(line)),
               _ARGCOMPLETE_STDOUT_FILENAME=str(out), _ARGCOMPLETE_IFS="\n")
    proc = subprocess.run([str(script)], env=env, capture_output=True, text=True, check=False,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert {w.strip() for w in out.read_text().split("\n") if w.strip()} == expected
