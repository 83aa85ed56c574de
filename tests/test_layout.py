"""The package's shape, as docs/development.md describes it: folders in layers
that only import from below (``LAYERS``), no import cycle, no private name imported across
modules, small modules, classes and functions; the core never reaches up into the shell
(``orchestration/``, ``defs/``, ``cli/``, ``app/``, the code location); Dagster only in
``orchestration/``, the autoloaded ``defs/`` and the ``definitions`` entry point."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "split_assets"
MAX_MODULE_LINES = 300
MAX_CLASS_LINES = 150
MAX_FUNCTION_LINES = 50
# The folders (and top-level modules) bottom up: each imports only from layers below its own,
# never sideways, at the top of a module or inside a function alike (docs/development.md).
LAYERS: tuple[frozenset[str], ...] = tuple(map(frozenset, (
    ("split_assets", "errors", "config_keys"),  # the root; the errors; the config keys' table
    ("lib", "envfile"),  # no domain: canonical JSON, files, interrupts, redaction, .env
    ("store",),  # everything persisted: the signal store (SQLite, PostgreSQL), ledger, caches
    ("sources",),  # a workspace's inputs read: benchmark, harness db, video store, config file
    ("settings",),  # the config's sections and their loading
    ("split", "judge", "importing"),  # the split core, the judges, other tools' files in
    ("workspace",),  # one loaded workspace: inputs, fingerprint, partition
    ("evaluation", "demo"),  # candidates against the frozen pools; the sample workspace
    ("diagnosis",),  # the judge over the baseline's wrong answers
    ("review", "report"),  # human labels of the judge's verdicts; the split card
    ("app",),  # what the CLI and Dagster both build: session, messages, declared workspaces
    ("orchestration",),  # Dagster: assets, checks, sensors, resources, runs
    ("cli", "defs", "components", "api", "loops"),  # the entry points; an optimizer's loop
    ("definitions",),  # the code location
)))
CORE = ("store", "sources", "settings", "split", "judge", "importing", "workspace",
        "evaluation", "diagnosis", "review", "report")
SHELL = ("split_assets.orchestration", "split_assets.defs", "split_assets.cli", "split_assets.app",
         "split_assets.definitions", "split_assets.components")


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


# The judges' fingerprinted source files (``Judge.source_files``): an edit there moves the judge's
# fingerprint and makes every user pay for a re-diagnosis (``tests/demo`` pins it).
FINGERPRINTED = {"judge/rules.py", "judge/schema.py", "judge/openai_judge.py", "judge/render.py",
                 "sources/trace_steps.py"}


def _longer_than(kinds: tuple[type, ...], limit: int) -> dict[str, int]:
    long = {}
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, kinds):
                n = node.end_lineno - node.lineno + 1
                if n > limit:
                    long[f"{path.relative_to(PACKAGE)}:{node.name}"] = n
    return long


def test_module_names_are_unique() -> None:
    """A module's name says what it is, once: no two modules share one."""
    names = [p.name for p in _modules() if p.name != "__init__.py"]
    assert sorted({n for n in names if names.count(n) > 1}) == []


def test_no_module_over_300_lines() -> None:
    long = {str(p.relative_to(PACKAGE)): n for p in _modules()
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert long == {}


def test_no_class_over_150_lines() -> None:
    assert _longer_than((ast.ClassDef,), MAX_CLASS_LINES) == {}


def test_no_function_over_50_lines() -> None:
    assert _longer_than((ast.FunctionDef, ast.AsyncFunctionDef), MAX_FUNCTION_LINES) == {}


def test_fingerprinted_files_are_the_judges(monkeypatch: pytest.MonkeyPatch) -> None:
    from split_assets.judge import build_judge
    from split_assets.settings import DiagConfig

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


def _folder(module: str) -> str:
    return module.split(".")[1] if "." in module else module


def test_every_folder_has_a_layer() -> None:
    folders = {_folder(m) for m in import_graph()}
    assert folders == set().union(*LAYERS)


def test_folders_only_import_from_layers_below() -> None:
    """``errors < lib < store < sources < settings < split, judge, importing < workspace < ...``: no
    folder imports one of its own layer or above (function-local imports included)."""
    layer = {folder: i for i, folders in enumerate(LAYERS) for folder in folders}
    wrong = {f"{module} -> {dep}" for module, deps in import_graph().items() for dep in deps
             if _folder(dep) != _folder(module)
             and layer[_folder(dep)] >= layer[_folder(module)]}
    assert wrong == set()


def test_the_core_never_imports_the_shell() -> None:
    """The core receives plain data (inputs, partition, judge, store), never the shell's
    Session, Dagster's definitions or the CLI."""
    graph = import_graph()
    wrong = {f"{module} -> {dep}" for module, deps in graph.items()
             if module.split(".")[1:2] and module.split(".")[1] in CORE
             for dep in deps if dep.startswith(SHELL)}
    assert wrong == set()


def test_the_core_never_holds_the_whole_config() -> None:
    """Core functions take plain data and the settings they read (``Inputs.diag``,
    ``Partition.paths``, a section), never the whole ``LoadedConfig``."""
    wrong = set()
    for path in _modules():
        folder = path.relative_to(PACKAGE).parts[0]
        if folder in CORE and folder not in ("settings", "workspace"):  # the config's owners
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.Attribute) and node.attr == "loaded":
                    wrong.add(f"{_name(path)}:{node.lineno} .loaded")
                elif isinstance(node, ast.ImportFrom) and any(
                        a.name in ("LoadedConfig", "load_config") for a in node.names):
                    wrong.add(f"{_name(path)}:{node.lineno} imports {node.names[0].name}")
    assert wrong == set()


YAML_KEY = re.compile(r"(?<![\w.])(?:paths|diag|video_split|evaluation)\.[a-z_]+")


def test_the_core_names_config_parameters_not_keys() -> None:
    """A message of the core names a parameter (``config_key("signals_db")``): where the user
    sets it is the one table's (``config_keys.py``), not spelled again in a string."""
    wrong = set()
    for path in _modules():
        if path.relative_to(PACKAGE).parts[0] not in CORE or path.parts[-2] == "settings":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                      if isinstance(n, ast.Module | ast.ClassDef | ast.FunctionDef
                                    | ast.AsyncFunctionDef)
                      and n.body and isinstance(n.body[0], ast.Expr)}
        for node in ast.walk(tree):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                    and id(node) not in docstrings):
                wrong |= {f"{_name(path)}:{node.lineno} {m.group(0)}"
                          for m in YAML_KEY.finditer(node.value)
                          if m.group(0) not in ("evaluation.json", "video_split.yaml")}
    assert wrong == set()


def test_only_the_shell_imports_dagster() -> None:
    importers = set()
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(n == "dagster" or n.startswith("dagster.") for n in names):
                importers.add(path.relative_to(PACKAGE).parts[0])
    assert importers == {"orchestration", "defs", "definitions.py"}


def _imported(modules: str, *watched: str) -> list[str]:
    code = (f"import json, sys, {modules}; "
            f"print(json.dumps(sorted(m for m in {watched!r} if m in sys.modules)))")
    return json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True,
                                     text=True, check=True).stdout)


@pytest.mark.slow  # a fresh interpreter
def test_the_core_loads_without_dagster_or_scipy() -> None:
    """A command that fails early (or never launches a run) does not pay for those imports."""
    assert _imported("split_assets.cli, split_assets.app.session, split_assets.diagnosis.runner",
                     "dagster", "scipy") == []


@pytest.mark.slow  # a fresh interpreter
def test_a_warm_run_needs_no_scipy() -> None:
    """scipy (about 1 s to import) loads only for what needs it: the MILP fallback and the
    class LP of the selection, the tests of ``compare``."""
    assert _imported("split_assets.definitions, split_assets.split.selection, "
                     "split_assets.evaluation.power", "scipy") == []


@pytest.mark.slow  # a fresh interpreter
def test_a_dry_run_never_loads_dagster(small_workspace: Path) -> None:
    code = ("import json, sys; from split_assets.cli import main; "
            f"code = main(['run', '--dry-run', '--config', {str(small_workspace)!r}]); "
            "print(json.dumps([code, 'dagster' in sys.modules, 'scipy' in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip().splitlines()[-1]
    assert json.loads(out) == [0, False, False]


def test_no_module_imports_another_modules_private_name() -> None:
    """A leading underscore means "this module's own": what two modules share is public in
    the one that owns it (``from m import _x`` and ``m._x`` on an imported module alike)."""
    modules = {_name(p) for p in _modules()}
    found = set()
    for path in _modules():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported_modules = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("split_assets"):
                for a in node.names:
                    if f"{node.module}.{a.name}" in modules:
                        imported_modules.add(a.asname or a.name)
                    elif a.name.startswith("_"):
                        found.add(f"{_name(path)}: {node.module}.{a.name}")
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id in imported_modules and node.attr.startswith("_")):
                found.add(f"{_name(path)}: {node.value.id}.{node.attr}")
    assert found == set()


def test_the_benchmarks_import_nothing_from_the_tests() -> None:
    """``bench/`` runs as ``python -m bench.NAME``: what it shares with the tests is in
    ``testkit/``, never reached through ``sys.path`` or the tests' helpers."""
    wrong = []
    for path in sorted((PACKAGE.parent / "bench").glob("*.py")):
        text = path.read_text(encoding="utf-8")
        for bad in (r"sys\.path\.(insert|append)|sys\.path\s*[+=\[]", r"from helpers\b",
                    r"import helpers\b", r"from conftest\b", r"/ \"tests\""):
            if re.search(bad, text):
                wrong.append(f"{path.name}: {bad}")
    assert wrong == []
