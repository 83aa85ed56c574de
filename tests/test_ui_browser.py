"""The Dagster UI, through one real `dg dev` (as `make ui` starts it) serving two declared
workspaces, `alpha` and `beta`, that share one judge (so one fingerprint) and differ in their
seed, as a user drives it in Debian's chromium (Playwright, headless; no ``playwright
install``): both lineages, each workspace materialized from its own launch dialog (its
``pools.json`` byte-identical to that workspace's solo ``split-assets run``; the run's checks read
back through GraphQL), the resource view per workspace, a config change picked up after a
reload (the sensor registers the new fingerprint), an invalid config's one line on the sensor's
page, and a stale partition re-frozen from its stored diagnoses. Screenshots go to the test's
temporary folder (``SPLIT_ASSETS_SHOTS=DIR`` keeps them); a step that does not appear fails with
the page's text."""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import edit_config, kv
from helpers.dagster_ui import start_dg_dev
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import sync_playwright

CHROMIUM = "/usr/bin/chromium"
ASSETS = ("candidate_evaluation", "canonical_predictions", "diagnosis_signals", "frozen_pools",
          "infra_t0_signals", "trainval_selection")


LOCATION = "split_assets"
SEEDS = {"alpha": 7, "beta": 8}


def _workspace(template: Path, where: Path, name: str) -> Path:
    """A copy of the template with ``name``'s seed; its config."""
    shutil.copytree(template, where)
    return edit_config(where / "video_split.yaml", video_split={"seed": SEEDS[name]})


def _solo_pools(template: Path, home_template: Path, root: Path, name: str) -> bytes:
    """The pools.json bytes of the workspace run alone: its own copy, its own instance, not
    declared (unprefixed), by ``split-assets run``."""
    config = _workspace(template, root / "solo" / name, name)
    home = root / "solo" / f"home-{name}"
    shutil.copytree(home_template, home)
    env = {k: v for k, v in os.environ.items() if k != "SPLIT_ASSETS_CONFIG"}
    env.update(DAGSTER_HOME=str(home), SPLIT_ASSETS_WORKSPACES=str(root / "solo" / "none"))
    proc = subprocess.run([str(Path(sys.executable).parent / "split-assets"), "run", "--config",
                           str(config)], env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return Path(kv(proc.stdout)["pools"]).read_bytes()


@pytest.fixture(scope="module")
def shared(_small_template: Path, _dagster_home_template: Path,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple]:
    """One `dg dev` over two declared workspaces with one judge."""
    from split_assets.app.declared_workspaces import declare

    root = tmp_path_factory.mktemp("ui")
    home, folder = root / "home", root / "workspaces"
    shutil.copytree(_dagster_home_template, home)
    configs = {}
    for name in SEEDS:
        configs[name] = _workspace(_small_template, root / name, name)
        declare(name, configs[name], folder)
    solo = {name: _solo_pools(_small_template, _dagster_home_template, root, name)
            for name in SEEDS}
    env = {"SPLIT_ASSETS_WORKSPACES": str(folder), "DAGSTER_HOME": str(home)}
    with start_dg_dev(home, env) as dev:
        yield dev, configs, home, solo


@pytest.fixture
def ui(shared: tuple, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple]:
    assert Path(CHROMIUM).is_file(), "chromium is missing: apt-get install chromium"
    dev, configs, home, solo = shared
    monkeypatch.setenv("DAGSTER_HOME", str(home))  # the instance dg dev serves
    shots = tmp_path / "screenshots"
    shots.mkdir()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.set_default_timeout(180_000)  # load slows, never fails
        yield dev, page, shots, configs, solo
        browser.close()


def _fingerprint(config: Path) -> str:
    from split_assets.app.session import Session

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


def _registered(workspace: str, key: str) -> Callable[[], bool]:
    from dagster import DagsterInstance

    return lambda: DagsterInstance.get().has_dynamic_partition(
        f"{workspace}__diag_fingerprint", key)


def _group(dev, workspace: str) -> str:  # noqa: ANN001
    """The workspace's lineage: its group's page in the code location."""
    return f"{dev.url}/locations/{LOCATION}/asset-groups/{workspace}"


def _materialize(dev, page, workspace: str, key: str, shots: Path,  # noqa: ANN001
                 name: str) -> str:
    """On the workspace's lineage: Materialize all -> pick the partition -> Launch 1 run ->
    the run page says Success; the run's id."""
    page.goto(_group(dev, workspace), wait_until="networkidle")
    page.get_by_role("button", name="Materialize all…").click()
    dialog = page.get_by_role("dialog")
    dialog.get_by_text("Select a partition or create one").click()
    # the visible option: Dagster's MiddleTruncate also renders the key in a hidden element
    # that measures it, which may come first in the page
    page.get_by_text(key, exact=True).filter(visible=True).first.click()
    dialog.get_by_role("button", name="Launch 1 run").click()
    page.get_by_text("View", exact=True).first.click()
    page.wait_for_url(re.compile(r".*/runs/[0-9a-f-]+"))
    success = page.get_by_text("Success", exact=True).first
    _until(page, f"run success ({name})", success.is_visible, shots, timeout_s=180)
    assert page.get_by_text(f"partition: {key}").first.is_visible()
    page.screenshot(path=str(shots / f"{name}.png"))
    return page.url.rsplit("/runs/", 1)[1].split("?")[0].split("/")[0]


def _check_the_run(dev, workspace: str, run_id: str, key: str) -> bytes:  # noqa: ANN001
    """What the launched run recorded, through the webserver's GraphQL API: every check passed
    but mcnemar_power, which warns on 60 videos (no gain is detectable on validation) and
    failed nothing, and the workspace's frozen_pools wrote its partition's pools.json (its
    bytes)."""
    from dagster import AssetKey, DagsterInstance
    from helpers.dagster_ui import check_evaluations

    assert check_evaluations(dev.url, run_id) == {**{name: True for name in (
        "pools_disjoint", "pools_cover_benchmark", "videos_atomic", "floors_met",
        "test_within_epsilon", "pools_sha256_matches", "judge_agreement",
        "reference_runs_informative")}, "mcnemar_power": False}  # 60 videos: a warning
    event = DagsterInstance.get().get_latest_materialization_event(
        AssetKey([workspace, "frozen_pools"]))
    assert event is not None and event.run_id == run_id
    pools = Path(event.asset_materialization.metadata["pools_path"].value)
    assert pools.is_file() and pools.parent.parent.name == key
    assert json.loads(pools.read_bytes())["diag_fingerprint"] == key
    return pools.read_bytes()


def _check_resources(dev, configs: dict[str, Path]) -> None:  # noqa: ANN001
    """The UI's resource view, per workspace: its signal store, its harness db (read-only)
    and its judge's endpoint settings, never a key."""
    from helpers.dagster_ui import resource_details

    shown = resource_details(dev.url)
    for workspace, config in configs.items():
        store = shown[f"{workspace}__signal_store"]
        assert store["values"]["location"] == json.dumps(str(config.parent / "signals.db"))
        harness = shown[f"{workspace}__harness_db"]
        assert harness["values"]["path"] == json.dumps(str(config.parent / "harness.db"))
        assert harness["values"]["read_only"] == "true"
        assert f"{workspace}/frozen_pools" in harness["assets"]
        judge = shown[f"{workspace}__judge_endpoint"]
        assert json.loads(judge["values"]["judge"]) == "rules"
        assert not any("key" in k.lower() for k in judge["values"])
    assert "sk-" not in json.dumps(shown)


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
    dev, page, shots, configs, solo = ui
    first = _fingerprint(configs["alpha"])
    assert _fingerprint(configs["beta"]) == first  # one judge: one partition key, two assets
    # 1. both lineages: each workspace's six assets under its own prefix; frozen_pools' checks
    for workspace in SEEDS:
        page.goto(f"{dev.url}/assets/{workspace}", wait_until="networkidle")
        for asset in ASSETS:
            _until(page, f"{workspace}'s asset {asset}",
                   lambda a=asset: a in page.inner_text("body"), shots)
        page.goto(_group(dev, workspace), wait_until="networkidle")
        _until(page, f"{workspace}'s lineage",
               page.get_by_text("Materialize all…").first.is_visible, shots)
        page.screenshot(path=str(shots / f"lineage-{workspace}.png"))
    page.goto(f"{dev.url}/assets/alpha/frozen_pools?view=checks", wait_until="networkidle")
    _until(page, "Checks (8)", page.get_by_text("Checks (8)").first.is_visible, shots)
    _check_resources(dev, configs)
    page.goto(f"{dev.url}/locations/{LOCATION}/resources", wait_until="networkidle")
    _until(page, "the resource view", page.get_by_text("alpha__harness_db").first.is_visible,
           shots)
    page.screenshot(path=str(shots / "resources.png"))
    page.goto(f"{dev.url}/locations/{LOCATION}/resources/alpha__harness_db",
              wait_until="networkidle")
    _until(page, "the harness db's settings", page.get_by_text("read_only").first.is_visible,
           shots)
    page.screenshot(path=str(shots / "resource-harness-db.png"))
    # 2. each sensor registered the key in its own workspace; each materialized from its own
    #    launch dialog gives the bytes of that workspace's solo run
    for workspace in SEEDS:
        _until(page, f"partition {first} registered for {workspace}",
               _registered(workspace, first), shots)
        run_id = _materialize(dev, page, workspace, first, shots, f"materialized-{workspace}")
        assert _check_the_run(dev, workspace, run_id, first) == solo[workspace], workspace
    # the power check's warning, as the checks view shows it (WARN severity: yellow, not red)
    page.goto(f"{dev.url}/assets/alpha/frozen_pools?view=checks", wait_until="networkidle")
    page.get_by_text("mcnemar_power").first.click()
    _until(page, "the power check's warning",
           lambda: "no gain is detectable on validation" in page.inner_text("body"), shots)
    page.screenshot(path=str(shots / "check-warning.png"))
    config = configs["alpha"]
    # 3. a new judge: edit, reload, and the new partition is offered and materialized
    edit_config(config, diag={"prompt_version": "v2"})
    second = _fingerprint(config)
    _reload(dev, page, shots)
    _until(page, f"partition {second} registered", _registered("alpha", second), shots)
    _materialize(dev, page, "alpha", second, shots, "new-fingerprint")
    # 4. an invalid value: the sensor's page shows the one line
    saved = config.read_bytes()
    edit_config(config, video_split={"n_trainval": -5})
    _reload(dev, page, shots)
    sensor = f"{dev.url}/locations/{LOCATION}/sensors/alpha__register_current_fingerprint"

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
    config.write_bytes(saved)
    edit_config(config, video_split={"seed": 9})
    _reload(dev, page, shots)
    before = _rows(config, first)
    _materialize(dev, page, "alpha", first, shots, "stale-refrozen")
    from dagster import AssetKey, DagsterInstance

    meta = DagsterInstance.get().get_latest_materialization_event(
        AssetKey(["alpha", "diagnosis_signals"])).asset_materialization.metadata
    assert meta["diagnosed_now"].value == 0
    assert _rows(config, first) == before
    if os.environ.get("SPLIT_ASSETS_SHOTS"):  # where the README's screenshots come from
        shutil.copytree(shots, os.environ["SPLIT_ASSETS_SHOTS"], dirs_exist_ok=True)
