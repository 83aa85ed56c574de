"""The Reference pages of the documentation site (``docs/reference/*.md``) are what
``tools/reference_pages.py`` makes of the code: a change of the command line, the config
models, the Dagster definitions or the errors that changes a page fails here, naming the page
and the command that writes it again. Each page is made in-process (no subprocess, no Dagster
instance: the definitions are loaded, never run)."""

from __future__ import annotations

import difflib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _tool() -> ModuleType:
    """``tools/reference_pages.py`` (a script, not a package: loaded from its file)."""
    name = "reference_pages"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


reference_pages = _tool()


@pytest.fixture(autouse=True)
def dagster_home(monkeypatch: pytest.MonkeyPatch) -> Path:
    """Instead of the conftest's (which builds an instance once per worker, ~5 s): making the
    pages loads the code location's definitions and never opens an instance."""
    home = Path("/nonexistent/split-assets-reference-pages")
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    return home


@pytest.mark.parametrize("path", list(reference_pages.PAGES))
def test_the_committed_page_is_what_the_code_makes(path: str) -> None:
    made = reference_pages.page(path)
    target = ROOT / path
    committed = target.read_text(encoding="utf-8") if target.is_file() else ""
    if committed != made:
        diff = "".join(difflib.unified_diff(
            committed.splitlines(keepends=True), made.splitlines(keepends=True),
            f"{path} (committed)", f"{path} (from the code)", n=1))
        pytest.fail(f"{path} is out of date with the code: run `{reference_pages.UPDATE}` "
                    f"and commit the page.\n{diff[:4000]}", pytrace=False)


def test_every_config_key_has_a_description() -> None:
    """The configuration page's meanings are the models' ``Field(description=...)``."""
    missing = reference_pages.undescribed_fields()
    assert not missing, (f"give these config fields a description= (split_assets/settings): "
                         f"{missing}")


def test_stale_names_each_page_that_differs_or_is_missing(tmp_path: Path) -> None:
    """What ``--check`` reports, on pages made up here."""
    made = {"docs/reference/a.md": "# A\n", "docs/reference/b.md": "# B\n",
            "docs/reference/c.md": "# C\n"}
    folder = tmp_path / "docs" / "reference"
    folder.mkdir(parents=True)
    (folder / "a.md").write_text("# A\n", encoding="utf-8")
    (folder / "b.md").write_text("# B, edited by hand\n", encoding="utf-8")
    assert reference_pages.stale(tmp_path, made) == ["docs/reference/b.md",
                                                     "docs/reference/c.md"]
