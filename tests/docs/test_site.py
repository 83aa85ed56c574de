"""The documentation: a README of at most 200 lines whose every link resolves, and the MkDocs
site built with ``--strict`` (a broken link, a missing page or a snippet that is not there
fails) and opened in Debian's chromium -- its home page and the command reference.
``SPLIT_ASSETS_SHOTS=DIR`` keeps the screenshots (``docs/site/`` holds the committed ones)."""

from __future__ import annotations

import functools
import http.server
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_the_readme_is_short_and_every_link_resolves() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 200
    local = [t for t in LINK.findall(text) if "://" not in t]
    assert local, "the README links into the site"
    missing = [t for t in local if not (ROOT / t.split("#", 1)[0]).exists()]
    assert not missing, f"README links to files that do not exist: {missing}"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The site built with --strict, served over HTTP (its pages link to folders)."""
    out = tmp_path_factory.mktemp("site") / "site"
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(out))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.slow
def test_the_site_opens_in_chromium(site: str, tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    assert Path(CHROMIUM).is_file(), "chromium is missing: apt-get install chromium"
    shots = Path(os.environ.get("SPLIT_ASSETS_SHOTS") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(f"{site}/")
        assert page.title().startswith("split_assets")
        for section in ("Getting started", "How-to guides", "Reference", "Explanation"):
            assert page.get_by_text(section, exact=True).first.is_visible()
        assert page.locator("img").first.evaluate("i => i.naturalWidth") > 300
        page.screenshot(path=str(shots / "home.png"))
        page.goto(f"{site}/reference/cli/")
        assert page.locator("h1").first.inner_text().strip()
        assert page.get_by_text("split-assets run").first.is_visible()
        page.screenshot(path=str(shots / "reference-cli.png"))
        browser.close()
    assert min((shots / name).stat().st_size for name in ("home.png", "reference-cli.png")) \
        > 10_000
