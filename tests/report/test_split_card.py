"""``split-assets report`` on the sample workspace: the HTML page, the Markdown file and every
figure are written; the card's numbers are the manifest's and the ledger's; the page opens in
Debian's chromium with every figure drawn."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import kv

from split_assets.report.card_data import TIERS

FIGURES = ("pool_sizes", "task_types", "difficulty", "accuracy", "tiers", "floors", "power",
           "leaderboard")
CHROMIUM = "/usr/bin/chromium"


@pytest.fixture(scope="module")
def card(tmp_path_factory: pytest.TempPathFactory, _dagster_home_template: Path) -> Iterator[dict]:
    """The demo workspace, two feedback submissions and a compare in its ledger, its card."""
    root = tmp_path_factory.mktemp("card")
    shutil.copytree(_dagster_home_template, root / "home")
    with pytest.MonkeyPatch.context() as env:  # its own instance and declarations
        env.setenv("DAGSTER_HOME", str(root / "home"))
        env.setenv("SPLIT_ASSETS_WORKSPACES", str(root / "workspaces"))
        yield _card(root)


def _card(root: Path) -> dict:
    import contextlib
    import io

    from split_assets.api import feedback_answers
    from split_assets.cli import main

    def cli(*argv: str) -> dict[str, str]:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(argv))
        assert code == 0, err.getvalue()
        return {**kv(out.getvalue()), "_out": out.getvalue()}

    cli("demo", "--dir", str(root / "ws"), "--name", "cardtest")
    config = str(root / "ws/video_split.yaml")
    cli("export", "jsonl", "--pool", "validation", "--out", str(root / "val.jsonl"),
        "--config", config)
    rows = [json.loads(line) for line in (root / "val.jsonl").read_text().splitlines()]
    given = {r["question_id"]: r["answer"] if i % 2 else r["baseline_letter"]
             for i, r in enumerate(rows)}  # half of the wrong answers fixed
    first = feedback_answers("loop-1", given, config)
    second = feedback_answers("loop-2", {r["question_id"]: r["baseline_letter"] for r in rows},
                              config)
    cli("compare", "--candidate", "loop-1", "--config", config)
    made = cli("report", "--config", config)
    ledger = json.loads(cli("ledger", "--config", config, "--json")["_out"])
    cli("verify", str(_pools(root)), "--config", config)  # the card left the split intact
    manifest = json.loads(_manifest(root).read_bytes())
    return {"made": made, "ledger": ledger, "manifest": manifest, "feedback": [first, second],
            "root": root, "rows": rows}


def _pools(root: Path) -> Path:
    return next((root / "ws/splits").glob("*/*/pools.json"))


def _manifest(root: Path) -> Path:
    return _pools(root).with_name("split_manifest.json")


def test_the_card_holds_every_file(card: dict) -> None:
    html, md = Path(card["made"]["card"]), Path(card["made"]["markdown"])
    assert html.parent == _pools(card["root"]).parent / "report"  # beside pools.json
    assert html.is_file() and md.is_file()
    for stem in FIGURES:
        for ext in ("png", "svg"):
            assert (html.parent / "figures" / f"{stem}.{ext}").stat().st_size > 1000
    assert int(card["made"]["figures"]) == 2 * len(FIGURES)
    page = html.read_text(encoding="utf-8")
    assert page.count("data:image/png;base64,") == len(FIGURES)  # self-contained
    assert "src=\"figures/" not in page and "<table>" in page


def test_the_card_s_numbers_are_the_manifest_s_and_the_ledger_s(card: dict) -> None:
    m, md = card["manifest"], Path(card["made"]["markdown"]).read_text(encoding="utf-8")
    acc = m["baseline_accuracy"]
    for pool in ("train", "validation", "test"):
        c, t = m["counts"][pool], m["tier_counts"][pool]
        assert (f"| {pool} | {c['videos']} | {c['questions']} | "
                f"{100 * acc[pool]:.1f} % |") in md
        assert f"| {pool} | {t.get('correct', 0)} | " + " | ".join(
            str(t.get(k, 0)) for k in TIERS) + " |" in md
    for task_type, floor in m["floors"].items():
        met = "yes" if floor["trainval_t2"] >= floor["floor"] else "no"
        assert f"| {task_type} | {floor['floor']} | {floor['trainval_t2']} | {met} |" in md
    big = max((r for r in m["test_deviation"] if r["constrained"]),
              key=lambda r: abs(r["deviation"]))
    assert f"{100 * big['deviation']:+.2f} pp ({big['dimension']} {big['category']})" in md
    for pool in ("validation", "test"):
        assert f"{100 * m['power'][pool]['mde']:.2f} |" in md
    assert m["pools_sha256"] in md and m["diag_fingerprint"] in md
    looks = Counter(r["pool"] for r in card["ledger"] if not r["is_repeat"])
    repeats = Counter(r["pool"] for r in card["ledger"] if r["is_repeat"])
    assert f"| validation | {looks['validation']} | {repeats['validation']} |" in md
    assert looks["validation"] == 2 and repeats["validation"] == 1  # compare repeated loop-1
    first, second = card["feedback"]
    assert f"| 1 | loop-1 | {first['leaderboard_accuracy']:.4f} | yes |" in md
    assert f"| 2 | loop-2 | {second['leaderboard_accuracy']:.4f} | no |" in md
    page = Path(card["made"]["card"]).read_text(encoding="utf-8")
    for row in card["rows"][:50]:  # ids and statistics only: no question text, no option
        assert row["question"] not in md and row["question"] not in page
        assert row["options"][0] not in md


@pytest.mark.slow
def test_the_card_opens_in_chromium(card: dict, tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    assert Path(CHROMIUM).is_file(), "chromium is missing: apt-get install chromium"
    html = Path(card["made"]["card"])
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1100, "height": 900})
        page.goto(html.as_uri())
        assert page.title().startswith("Split card: videomme")
        drawn = page.eval_on_selector_all("img", "imgs => imgs.map(i => i.naturalWidth)")
        assert len(drawn) == len(FIGURES) and min(drawn) > 300
        assert page.get_by_role("heading", name="The ledger").is_visible()
        page.screenshot(path=str(tmp_path / "split-card.png"), full_page=False)
        browser.close()
    assert (tmp_path / "split-card.png").stat().st_size > 10_000
