"""The package's shape, as the README's "Development" section describes it: small modules and
functions, Dagster only in ``defs/`` (and the ``definitions`` entry point that assembles it)."""

from __future__ import annotations

import ast
import json
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


def _imported(modules: str, *watched: str) -> list[str]:
    code = (f"import json, sys, {modules}; "
            f"print(json.dumps(sorted(m for m in {watched!r} if m in sys.modules)))")
    return json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True,
                                     text=True, check=True).stdout)


def test_the_core_loads_without_dagster_or_scipy() -> None:
    """A command that fails early (or never launches a run) does not pay for those imports."""
    assert _imported("split_assets.cli, split_assets.workspace, split_assets.diagnosis.runner",
                     "dagster", "scipy") == []


def test_a_warm_run_needs_no_scipy() -> None:
    """scipy (about 1 s to import) loads only for what needs it: the MILP fallback and the
    class LP of the selection, the tests of ``compare``."""
    assert _imported("split_assets.definitions, split_assets.split.selection, "
                     "split_assets.evaluation.power", "scipy") == []


def test_a_dry_run_never_loads_dagster(small_workspace: Path) -> None:
    code = ("import json, sys; from split_assets.cli import main; "
            f"code = main(['run', '--dry-run', '--config', {str(small_workspace)!r}]); "
            "print(json.dumps([code, 'dagster' in sys.modules, 'scipy' in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip().splitlines()[-1]
    assert json.loads(out) == [0, False, False]
