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
    # a full-benchmark candidate: its import is test look 1; compare on test is its repeat
    cli("import", "predictions", "--jsonl", str(_full_candidate(root)), "--run-id", "k32",
        "--workspace", str(root / "ws"), "--role", "candidate")
    compared = json.loads(cli("compare", "--candidate", "k32", "--pool", "test", "--json",
                              "--config", config)["_out"])
    made = cli("report", "--config", config)
    ledger = json.loads(cli("ledger", "--config", config, "--json")["_out"])
    cli("verify", str(_pools(root)), "--config", config)  # the card left the split intact
    manifest = json.loads(_manifest(root).read_bytes())
    return {"made": made, "ledger": ledger, "manifest": manifest, "feedback": [first, second],
            "root": root, "rows": rows, "compared": compared}


def _full_candidate(root: Path) -> Path:
    """The baseline's answers with every third wrong one corrected, on every question."""
    import sqlite3

    truth = {q["question_id"]: q["answer"] for v in json.loads(
        (root / "ws/questions/videomme.json").read_text()) for q in v["questions"]}
    with sqlite3.connect(root / "ws/harness.db") as conn:
        given = dict(conn.execute("SELECT question_id, raw_response FROM predictions WHERE "
                                  "run_id = 'baseline-2026-01'").fetchall())
    for i, q in enumerate(sorted(given)):
        if i % 3 == 0:
            given[q] = f"The answer is {truth[q]}."
    path = root / "k32.jsonl"
    path.write_text("".join(json.dumps({"question_id": q, "response": r}) + "\n"
                            for q, r in sorted(given.items())))
    return path


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
    assert Path(card["made"]["latex"]).name == "split_card.tex"
    ids = json.loads(Path(card["made"]["pool_ids"]).read_text())  # ids in a file, not inline
    doc = json.loads(_pools(card["root"]).read_text())
    assert ids == {pool: sorted(doc["pools"][pool]) for pool in ("train", "validation", "test")}
    md = Path(card["made"]["markdown"]).read_text(encoding="utf-8")
    assert "(pool_ids.json)" in md and not any(f"{q} " in md or f"{q}," in md
                                               for q in ids["test"][:50])
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


def _claims_row(text: str) -> str:
    return next(line for line in text.splitlines() if line.startswith("| 1 | k32"))


def test_the_claims_come_first_and_agree_with_compare(card: dict) -> None:
    """The look's gain, CI, p and verdict in the card (Markdown, HTML, LaTeX) are those
    compare --pool test --json printed; its repeat is folded into the look."""
    test = card["compared"]["pools"]["test"]
    r, c = test["vs_baseline"], test["claim"]
    gain = (f"{100 * r['gain']:+.2f} [{100 * r['gain_ci95'][0]:+.2f}, "
            f"{100 * r['gain_ci95'][1]:+.2f}]")
    verdict = "significant gain" if c["significant"] else "not significant"
    expected = [str(c["look"]), "k32", str(r["n"]), "baseline", f"{r['reference_accuracy']:.4f}",
                f"{r['candidate_accuracy']:.4f}", gain, f"{r['p_exact']:.4g}",
                f"{r['p_mid']:.4g}", f"{c['p_one_sided']:.4g}", "0.05/5 = 0.01", verdict, "yes"]
    md = Path(card["made"]["markdown"]).read_text(encoding="utf-8")
    assert _claims_row(md) == "| " + " | ".join(expected) + " |"
    assert md.index("## Claims on test") < md.index("## Summary") < md.index("## Pools")
    assert md.index("### The validation leaderboard") < md.index("## Summary")
    page = Path(card["made"]["card"]).read_text(encoding="utf-8")
    assert "<tr>" + "".join(f"<td>{v}</td>" for v in expected) + "</tr>" in page
    tex = Path(card["made"]["latex"]).read_text(encoding="utf-8")
    chosen = [expected[i] for i in (0, 1, 2, 4, 5, 6, 7, 8, 9, 11)]
    assert " & ".join(chosen) + " \\\\" in tex
    assert "\\toprule" in tex and "\\bottomrule" in tex and "0.05/5" in tex
    # the baseline and the candidate's provenance, and the split's settings
    assert "| baseline-2026-01 | baseline |" in md
    assert "| k32 | candidate | predictions JSONL |" in md
    assert "Look 1 was evaluated again 1 time(s)" in md  # the compare, folded into it
    vs = card["manifest"]["config"]["video_split"]
    assert f"| n_trainval | `{vs['n_trainval']}` |" in md
    assert f"| val_ratio | `{vs['val_ratio']}` |" in md


def test_exported_rows_carry_the_benchmark_s_video_key(card: dict) -> None:
    """Video-MME's lmms-eval task finds a video by its videoID (held by the video record)."""
    videos = {v["video_id"]: v["videoID"] for v in json.loads(
        (card["root"] / "ws/questions/videomme.json").read_text())}
    assert card["rows"] and all(r["videoID"] == videos[r["video_id"]] for r in card["rows"])


def test_latex_escapes_run_ids() -> None:
    from split_assets.report.card_claims_render import tex_escape

    assert tex_escape("run_1 & 50% {x}") == "run\\_1 \\& 50\\% \\{x\\}"


def test_a_figure_with_no_data_is_a_sentence(tmp_path: Path) -> None:
    """The floors figure of a split without T2 or floors draws nothing: it is not written and
    the card says so in one sentence (checked from the drawn axes' data)."""
    from split_assets.report.card_data import CardData
    from split_assets.report.card_figures import draw

    manifest = {"floors": {}, "tier_counts": {p: {} for p in ("train", "validation", "test")},
                "power": {}, "counts": {p: {"videos": 1, "questions": 3}
                                        for p in ("train", "validation", "test")},
                "distributions": {p: {"task_type": {"a": 3}, "difficulty": {"short": 3}}
                                  for p in ("train", "validation", "test")},
                "baseline_accuracy": {"global": 1.0, "train": 1.0, "validation": 1.0,
                                      "test": 1.0}}
    card = CardData(manifest, {p: {} for p in ("train", "validation", "test")}, {}, {})
    drawn = {f.stem: f for f in draw(card, tmp_path)}
    for stem in ("floors", "tiers", "power"):
        assert drawn[stem].points == 0 and not (tmp_path / f"{stem}.png").exists()
        assert "nothing to draw" in drawn[stem].empty
    assert drawn["accuracy"].points == 4 and (tmp_path / "accuracy.png").is_file()


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
        # every figure shown holds data: the points it drew, as the page carries them
        points = page.eval_on_selector_all("img", "imgs => imgs.map(i => +i.dataset.points)")
        assert len(points) == len(FIGURES) and min(points) > 0, points
        assert page.get_by_role("heading", name="Claims on test").is_visible()
        assert page.get_by_role("heading", name="The ledger").is_visible()
        page.screenshot(path=str(tmp_path / "split-card.png"), full_page=False)
        browser.close()
    assert (tmp_path / "split-card.png").stat().st_size > 10_000
