"""The package's shape, as the README's "Development" section describes it: small modules and
functions, Dagster only in ``defs/`` (and the ``definitions`` entry point that assembles it)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "split_assets"
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 60


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_no_module_over_500_lines() -> None:
    long = {str(p.relative_to(PACKAGE)): n for p in _modules()
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert long == {}


def test_no_function_over_60_lines() -> None:
    long = {}
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                n = node.end_lineno - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    long[f"{path.relative_to(PACKAGE)}:{node.name}"] = n
    assert long == {}


def test_only_defs_imports_dagster() -> None:
    importers = set()
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(n == "dagster" or n.startswith("dagster.") for n in names):
                importers.add(path.relative_to(PACKAGE).parts[0])
    assert importers == {"defs", "definitions.py"}


def test_the_core_loads_without_dagster_or_scipy_stats() -> None:
    """A command that fails early (or never launches a run) does not pay for those imports."""
    code = ("import sys, split_assets.cli, split_assets.workspace, split_assets.diagnosis.runner;"
            " print(sorted(m for m in ('dagster', 'scipy.stats') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"
