"""The Dagster UI, through one real `dagster dev`, as a user drives it in Debian's chromium
(Playwright, headless; no ``playwright install``): lineage, materializing from the launch dialog
(the run's checks read back through GraphQL), a config change picked up after a reload (the
sensor registers the new fingerprint), an invalid config's one line on the sensor's page, and a
stale partition re-frozen from its stored diagnoses. Screenshots go to the test's temporary
folder; a step that does not appear fails with the page's text."""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import edit_config
from helpers.dagster_ui import start_dagster_dev
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import sync_playwright

CHROMIUM = "/usr/bin/chromium"
ASSETS = ("candidate_evaluation", "canonical_predictions", "diagnosis_signals", "frozen_pools",
          "infra_t0_signals", "trainval_selection")


@pytest.fixture(scope="module")
def shared(_small_template: Path, _dagster_home_template: Path,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple]:
    """One `dagster dev` over one workspace."""
    root = tmp_path_factory.mktemp("ui")
    ws, home = root / "ws", root / "home"
    shutil.copytree(_small_template, ws)
    shutil.copytree(_dagster_home_template, home)
    config = ws / "video_split.yaml"
    env = {"SPLIT_ASSETS_CONFIG": str(config), "DAGSTER_HOME": str(home)}
    with start_dagster_dev(home, ws, env) as dev:
        yield dev, config, home


@pytest.fixture
def ui(shared: tuple, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple]:
    assert Path(CHROMIUM).is_file(), "chromium is missing: apt-get install chromium"
    dev, config, home = shared
    monkeypatch.setenv("DAGSTER_HOME", str(home))  # the instance dagster dev serves
    shots = tmp_path / "screenshots"
    shots.mkdir()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.set_default_timeout(180_000)  # load slows, never fails
        yield dev, page, shots, config
        browser.close()


def _fingerprint(config: Path) -> str:
    from split_assets.session import Session

    return Session.open(config).partition.key


def _until(page, what: str, ok: Callable[[], bool], shots: Path, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if ok():
            return
        time.sleep(1)
    slug = re.sub(r"\W+", "_", what)
    page.screenshot(path=str(shots / f"missing-{slug}.png"))
    pytest.fail(f"{what} did not appear; the page says:\n{page.inner_text('body')[:3000]}")


def _registered(key: str) -> Callable[[], bool]:
    from dagster import DagsterInstance

    return lambda: DagsterInstance.get().has_dynamic_partition("diag_fingerprint", key)


def _materialize(dev, page, key: str, shots: Path, name: str) -> str:  # noqa: ANN001
    """Materialize all -> pick the partition -> Launch 1 run -> the run page says Success;
    the run's id."""
    page.goto(f"{dev.url}/asset-groups/video_split", wait_until="networkidle")
    page.get_by_role("button", name="Materialize all…").click()
    dialog = page.get_by_role("dialog")
    dialog.get_by_text("Select a partition or create one").click()
    page.get_by_text(key, exact=True).first.click()
    dialog.get_by_role("button", name="Launch 1 run").click()
    page.get_by_text("View", exact=True).first.click()
    page.wait_for_url(re.compile(r".*/runs/[0-9a-f-]+"))
    success = page.get_by_text("Success", exact=True).first
    _until(page, f"run success ({name})", success.is_visible, shots, timeout_s=180)
    assert page.get_by_text(f"partition: {key}").first.is_visible()
    page.screenshot(path=str(shots / f"{name}.png"))
    return page.url.rsplit("/runs/", 1)[1].split("?")[0].split("/")[0]


def _check_the_run(dev, run_id: str, key: str) -> None:  # noqa: ANN001
    """What the launched run recorded, through the webserver's GraphQL API: every check passed,
    and frozen_pools wrote its partition's pools.json."""
    from dagster import AssetKey, DagsterInstance
    from helpers.dagster_ui import check_evaluations

    assert check_evaluations(dev.url, run_id) == {name: True for name in (
        "mcnemar_power", "pools_disjoint", "pools_cover_benchmark", "videos_atomic",
        "floors_met", "test_within_epsilon", "pools_sha256_matches", "judge_agreement")}
    event = DagsterInstance.get().get_latest_materialization_event(AssetKey("frozen_pools"))
    assert event is not None and event.run_id == run_id
    pools = Path(event.asset_materialization.metadata["pools_path"].value)
    assert pools.is_file() and pools.parent.parent.name == key
    assert json.loads(pools.read_bytes())["diag_fingerprint"] == key


def _reload(dev, page, shots: Path) -> None:  # noqa: ANN001
    """Click "Reload all" and wait until the code location has loaded again (page state, not
    a fixed sleep: load slows it, never fails it)."""
    from helpers.dagster_ui import locations_loaded_at

    loaded: list[float] = []  # a location still loading: wait for it first

    def settled() -> bool:
        at = locations_loaded_at(dev.url)
        loaded[:] = [at] if at is not None else []
        return bool(loaded)

    _until(page, "the code location loaded", settled, shots, timeout_s=240)
    before = loaded[0]
    page.goto(f"{dev.url}/locations", wait_until="networkidle")
    page.get_by_role("button").filter(has_text=re.compile(r"^\s*Reload all\s*$")).first.click()

    def reloaded() -> bool:
        after = locations_loaded_at(dev.url)
        return after is not None and after > before

    _until(page, "the code location reloaded", reloaded, shots, timeout_s=240)


def _rows(config: Path, key: str) -> list[tuple]:
    with sqlite3.connect(config.parent / "signals.db") as conn:
        return conn.execute("SELECT * FROM signals WHERE diag_fingerprint = ? ORDER BY 2",
                            (key,)).fetchall()


@pytest.mark.timeout(900)
def test_a_user_works_in_the_ui(ui: tuple) -> None:
    dev, page, shots, small_workspace = ui
    first = _fingerprint(small_workspace)
    # 1. the lineage shows the six assets; frozen_pools has the seven checks
    page.goto(f"{dev.url}/asset-groups/video_split", wait_until="networkidle")
    for asset in ASSETS:
        _until(page, f"asset {asset}", page.get_by_text(asset).first.is_visible, shots)
    page.screenshot(path=str(shots / "lineage.png"))
    page.goto(f"{dev.url}/assets/frozen_pools?view=checks", wait_until="networkidle")
    _until(page, "Checks (7)", page.get_by_text("Checks (7)").first.is_visible, shots)
    # 2. the sensor registered the config's partition; materialize it from the launch dialog
    _until(page, f"partition {first} registered", _registered(first), shots)
    run_id = _materialize(dev, page, first, shots, "materialized")
    _check_the_run(dev, run_id, first)
    # 3. a new judge: edit, reload, and the new partition is offered and materialized
    edit_config(small_workspace, diag={"prompt_version": "v2"})
    second = _fingerprint(small_workspace)
    _reload(dev, page, shots)
    _until(page, f"partition {second} registered", _registered(second), shots)
    _materialize(dev, page, second, shots, "new-fingerprint")
    # 4. an invalid value: the sensor's page shows the one line
    saved = small_workspace.read_bytes()
    edit_config(small_workspace, video_split={"n_trainval": -5})
    _reload(dev, page, shots)
    sensor = f"{dev.url}/locations/split_assets.definitions/sensors/register_current_fingerprint"

    def error_shown() -> bool:  # the latest tick failed; its "View" shows why, in one line
        page.goto(sensor, wait_until="networkidle")
        failure = page.get_by_text("Failure", exact=True).first
        try:  # the tick table renders after the page: wait for it, briefly, then poll again
            failure.wait_for(state="visible", timeout=10_000)
        except PlaywrightTimeout:
            return False
        page.get_by_text("View", exact=True).first.click()
        try:
            page.get_by_text("invalid config: 'video_split.n_trainval'").first.wait_for(
                state="visible", timeout=10_000)
        except PlaywrightTimeout:
            return False
        return True

    _until(page, "the invalid config's error on the sensor's page", error_shown, shots)
    page.screenshot(path=str(shots / "invalid-config.png"))
    # 5. the first partition, now stale, re-frozen from its stored diagnoses with a new seed
    small_workspace.write_bytes(saved)
    edit_config(small_workspace, video_split={"seed": 8})
    _reload(dev, page, shots)
    before = _rows(small_workspace, first)
    _materialize(dev, page, first, shots, "stale-refrozen")
    from dagster import AssetKey, DagsterInstance

    meta = DagsterInstance.get().get_latest_materialization_event(
        AssetKey("diagnosis_signals")).asset_materialization.metadata
    assert meta["diagnosed_now"].value == 0
    assert _rows(small_workspace, first) == before
    if os.environ.get("SPLIT_ASSETS_SHOTS"):  # where the README's screenshots come from
        shutil.copytree(shots, os.environ["SPLIT_ASSETS_SHOTS"], dirs_exist_ok=True)
