"""The package's shape, as the README's "Development" section describes it: small modules,
classes and functions; no import cycle; the core (``split/``, ``evaluation/``, ``diagnosis/``,
``judge/``, ``data/``) never reaches up into the shell (``shell/``, ``defs/``, ``cli``, the
``Session``, the declared workspaces); Dagster only in ``shell/``, the autoloaded ``defs/``,
``components.py`` and the ``definitions`` entry point that assembles them."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "split_assets"
MAX_MODULE_LINES = 400
MAX_CLASS_LINES = 200
MAX_FUNCTION_LINES = 50
CORE = ("split", "evaluation", "diagnosis", "judge", "data")
SHELL = ("split_assets.shell", "split_assets.defs", "split_assets.cli", "split_assets.session",
         "split_assets.definitions", "split_assets.components", "split_assets.instances")


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


# The judges' fingerprinted source files (``Judge.source_files``): an edit there moves the judge's
# fingerprint and makes every user pay for a re-diagnosis, so their functions are measured only
# when a change of judge is due anyway (``test_fingerprinted_files_are_the_judges``).
FINGERPRINTED = {"judge/rules.py", "judge/schema.py", "judge/openai_judge.py", "judge/render.py"}


def _longer_than(kinds: tuple[type, ...], limit: int) -> dict[str, int]:
    long = {}
    for path in _modules():
        if str(path.relative_to(PACKAGE)) in FINGERPRINTED and limit == MAX_FUNCTION_LINES:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, kinds):
                n = node.end_lineno - node.lineno + 1
                if n > limit:
                    long[f"{path.relative_to(PACKAGE)}:{node.name}"] = n
    return long


def test_no_module_over_400_lines() -> None:
    long = {str(p.relative_to(PACKAGE)): n for p in _modules()
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert long == {}


def test_no_class_over_200_lines() -> None:
    assert _longer_than((ast.ClassDef,), MAX_CLASS_LINES) == {}


def test_no_function_over_50_lines() -> None:
    assert _longer_than((ast.FunctionDef, ast.AsyncFunctionDef), MAX_FUNCTION_LINES) == {}


def test_fingerprinted_files_are_the_judges(monkeypatch: pytest.MonkeyPatch) -> None:
    from split_assets.config import DiagConfig
    from split_assets.judge import build_judge

    monkeypatch.setenv("OPENAI_API_KEY", "sk-layout")
    files = set()
    for judge in ("rules", "openai"):
        built = build_judge(DiagConfig(judge=judge, model="m", prompt_version="v1",
                                       context="answer_only"))
        files |= {str(p.relative_to(PACKAGE)) for p in built.source_files()}
    assert files == FINGERPRINTED


def import_graph() -> dict[str, set[str]]:
    """Module -> the package's modules it imports anywhere: at the top, inside functions and
    under ``TYPE_CHECKING`` alike (``from a import b`` counts ``a.b`` when that is a module)."""
    modules = {_name(p): p for p in _modules()}

    def resolve(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        deps: set[str | None] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                deps.update(resolve(a.name) for a in node.names
                            if a.name.startswith("split_assets"))
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                    "split_assets"):
                deps.add(resolve(node.module or ""))
                deps.update(f"{node.module}.{a.name}" for a in node.names
                            if f"{node.module}.{a.name}" in modules)
        graph[name] = {d for d in deps if d is not None and d != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_cycles_are_found() -> None:
    """The cycle finder itself: a two-module loop and a self-contained chain."""
    assert cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_no_import_cycle() -> None:
    assert cycles(import_graph()) == []


def test_the_core_never_imports_the_shell() -> None:
    """The core receives plain data (inputs, partition, judge, store), never the shell's
    Session, Dagster's definitions or the CLI."""
    graph = import_graph()
    wrong = {f"{module} -> {dep}" for module, deps in graph.items()
             if module.split(".")[1:2] and module.split(".")[1] in CORE
             for dep in deps if dep.startswith(SHELL)}
    assert wrong == set()


def test_only_the_shell_imports_dagster() -> None:
    importers = set()
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(n == "dagster" or n.startswith("dagster.") for n in names):
                importers.add(path.relative_to(PACKAGE).parts[0])
    assert importers == {"shell", "defs", "definitions.py"}


def _imported(modules: str, *watched: str) -> list[str]:
    code = (f"import json, sys, {modules}; "
            f"print(json.dumps(sorted(m for m in {watched!r} if m in sys.modules)))")
    return json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True,
                                     text=True, check=True).stdout)


def test_the_core_loads_without_dagster_or_scipy() -> None:
    """A command that fails early (or never launches a run) does not pay for those imports."""
    assert _imported("split_assets.cli, split_assets.session, split_assets.diagnosis.runner",
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
