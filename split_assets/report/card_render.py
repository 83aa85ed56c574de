"""The split card as Markdown (for a paper's appendix; figures beside it) and as one
self-contained HTML page (the same sections, figures embedded): ``write_card``."""

from __future__ import annotations

import base64
import html
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from split_assets.config_keys import config_key
from split_assets.lib.canonical import atomic_write_bytes
from split_assets.report.card_claims_render import (
    CARD_TEX,
    POOL_IDS,
    claims_section,
    claims_tex,
    provenance_section,
)
from split_assets.report.card_data import TIERS, CardData
from split_assets.report.card_figures import Figure, draw
from split_assets.split.layout import POOLS
from split_assets.split.stats import largest_deviation

CARD_MD, CARD_HTML, FIGURES = "split_card.md", "split_card.html", "figures"


def write_card(card: CardData, out: Path, benchmark: str) -> list[Path]:
    """``out/split_card.md``, ``out/split_card.html``, ``out/split_card.tex`` (the claims),
    ``out/pool_ids.json`` and ``out/figures/*.png|svg``."""
    figures = draw(card, out / FIGURES)
    markdown = "\n".join(sections(card, benchmark, figures))
    atomic_write_bytes(out / CARD_MD, markdown.encode("utf-8"))
    atomic_write_bytes(out / CARD_HTML, as_html(markdown, out, figures).encode("utf-8"))
    atomic_write_bytes(out / CARD_TEX, claims_tex(card, benchmark).encode("utf-8"))
    atomic_write_bytes(out / POOL_IDS, (json.dumps(card.pool_ids, indent=1) + "\n").encode())
    return [out / CARD_HTML, out / CARD_MD, out / CARD_TEX, out / POOL_IDS,
            *(out / FIGURES / f"{f.stem}.{ext}" for f in figures if f.points
              for ext in ("png", "svg"))]


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header),
            *("| " + " | ".join(str(v) for v in row) + " |" for row in rows), ""]


def _pct(x: float) -> str:
    return f"{100 * x:.1f} %"


def _figure(f: Figure) -> str:
    """A figure, or the one sentence that replaces it when it has no data."""
    if not f.points:
        return f"*{f.caption}* {f.empty}\n"
    return f"![{f.caption}]({FIGURES}/{f.stem}.png)\n\n*{f.caption}*\n"


def sections(card: CardData, benchmark: str, figures: list[Figure]) -> list[str]:
    m = card.manifest
    fig = {f.stem: _figure(f) for f in figures}
    return [f"# Split card: {benchmark}, split {m['split_id']}", "", *_warnings(m),
            *claims_section(card, _table), fig.get("leaderboard", ""), *_summary(card),
            *_provenance(m, benchmark), *provenance_section(card, m["config"]["video_split"]
                                                            ["baseline_run_id"], _table),
            *_settings(m), "## Pools", "",
            *_pools(m), fig["pool_sizes"], "## Representativeness", "", *_deviation(m),
            *_balanced(m),
            fig["task_types"], fig["difficulty"], fig["accuracy"], "## Diagnoses", "",
            *_tiers(card), fig["tiers"], *_floors(card), fig["floors"], "## Power", "",
            *_power(m), fig["power"], "## The judge", "", *_judge(card),
            "## The ledger", "", *_ledger(card),
            "---", "", "This card carries ids and statistics only, never the benchmark's "
            f"question text, so it can be shared where the benchmark's annotation cannot; the "
            f"pools' question ids are in [{POOL_IDS}]({POOL_IDS}), the claims as a LaTeX table "
            f"in [{CARD_TEX}]({CARD_TEX}).", ""]


def _settings(m: dict[str, Any]) -> list[str]:
    """The split's settings: what a reader needs to make the same split again."""
    vs = m["config"]["video_split"]
    rows = [[key, f"`{vs[key]}`"] for key in ("n_trainval", "val_ratio", "epsilon", "seed",
                                              "floor_share", "val_wrong_min", "balance_runs")
            if vs.get(key) not in (None, {}, [])]
    if vs.get("floor_k"):  # per task type: the floors table below
        rows.append(["floor_k", f"{len(vs['floor_k'])} task types (the floors under Diagnoses)"])
    return ["### Settings", "", *_table(["setting", "value"], rows)]


def _warnings(m: dict[str, Any]) -> list[str]:
    """A split that is valid but not outcome-driven says so first (``split/degenerate.py``)."""
    return [line for w in m.get("warnings", []) for line in (f"> **Warning**: {w}", "")]


def _balanced(m: dict[str, Any]) -> list[str]:
    """The balanced runs: each one's own test deviation, and the leave-one-run-out estimate
    of a model that was not balanced, beside random pools of the same size."""
    b = m.get("balance_runs")
    if not b:
        return [f"Only the baseline's accuracy is balanced (no `{config_key('balance_runs')}`): "
                "test is representative for the baseline, for other models no better than "
                "a random pool.", ""]
    loro, rnd = b["leave_one_run_out"], b["leave_one_run_out"]["random_pools"]
    rows = [[r, f"{100 * b['test_deviation'][r]:+.2f}", f"{100 * loro['per_run'][r]:.2f}",
             f"{100 * rnd['per_run'][r]:.2f}"] for r in b["runs"]]
    return [f"Balanced runs: {len(b['runs'])}. Left out of the selection one at a time, a run "
            f"deviates by {100 * loro['mean']:.2f} pp on average (max {100 * loro['max']:.2f})"
            f" from its full-benchmark accuracy; random pools of {rnd['test_videos']} videos: "
            f"{100 * rnd['mean']:.2f} pp (max {100 * rnd['max']:.2f}, {rnd['draws']} draws).",
            "", *_table(["run", "test deviation (pp)", "held out (pp)", "random pools (pp)"],
                        rows)]


def _summary(card: CardData) -> list[str]:
    m = card.manifest
    big, power = largest_deviation(m["test_deviation"]), m.get("power") or {}
    eps = m["config"]["video_split"].get("epsilon")
    short = [t for t, f in m["floors"].items() if f["trainval_t2"] < f["floor"]]
    lines = ["- **Pools** (videos / questions): " + ", ".join(
        f"{p} {m['counts'][p]['videos']} / {m['counts'][p]['questions']}" for p in POOLS),
        f"- **Largest test deviation**: {100 * big['deviation']:+.2f} pp "
        f"({big['dimension']} {big['category']})" + (f", epsilon {100 * eps:g} pp" if eps
                                                     else ""),
        f"- **Baseline accuracy**: global {_pct(m['baseline_accuracy']['global'])}, test "
        f"{_pct(m['baseline_accuracy']['test'])}"]
    for pool in ("validation", "test"):
        if power.get(pool, {}).get("mde") is not None:
            lines.append(f"- **Detectable gain on {pool}**: {100 * power[pool]['mde']:.1f} pp "
                         f"({power[pool]['questions']} questions, {power[pool]['videos']} "
                         "videos, 80 % power)")
    lines.append(f"- **T2 floors**: {len(m['floors']) - len(short)} of {len(m['floors'])} "
                 "met" + (f" (short: {', '.join(short)})" if short else ""))
    return ["## Summary", "", *lines, ""]


def _provenance(m: dict[str, Any], benchmark: str) -> list[str]:
    vs = m["config"]["video_split"]
    return ["## Provenance", "", *_table(["", ""], [
        ["benchmark", benchmark], ["baseline run", vs.get("baseline_run_id")],
        ["split id", m["split_id"]], ["seed", vs.get("seed")],
        ["diagnosis fingerprint", m["diag_fingerprint"]],
        ["pools sha256", f"`{m['pools_sha256']}`"], ["generated at", m["generated_at"]],
        ["made by", f"split_assets {m.get('made_by', {}).get('version', '?')}"]])]


def _pools(m: dict[str, Any]) -> list[str]:
    return _table(["pool", "videos", "questions", "baseline accuracy"], [
        [p, m["counts"][p]["videos"], m["counts"][p]["questions"],
         _pct(m["baseline_accuracy"][p])] for p in POOLS])


def _deviation(m: dict[str, Any]) -> list[str]:
    big = largest_deviation(m["test_deviation"])
    rows = [[r["dimension"], r["category"], _pct(r["global"]), _pct(r["test"]),
             f"{100 * r['deviation']:+.2f}", "yes" if r["constrained"] else "no"]
            for r in m["test_deviation"]]
    return [f"The test pool's largest deviation from the whole benchmark: "
            f"{100 * big['deviation']:+.2f} pp ({big['dimension']} {big['category']}).", "",
            *_table(["dimension", "category", "global", "test", "deviation (pp)",
                     "constrained"], rows)]


def _tiers(card: CardData) -> list[str]:
    m = card.manifest
    rows = [[p, m["tier_counts"][p].get("correct", 0),
             *(m["tier_counts"][p].get(t, 0) for t in TIERS)] for p in POOLS]
    by_type = [[t, *(card.by_type[p].get(t, {}).get(k, 0) for p in POOLS for k in TIERS)]
               for t in card.task_types]
    return [*_table(["pool", "correct", *TIERS], rows), "Per task type:", "",
            *_table(["task type", *(f"{p} {k}" for p in POOLS for k in TIERS)], by_type)]


def _floors(card: CardData) -> list[str]:
    floors = card.manifest["floors"]
    if not floors:
        return ["No floor_k is set: no task type needs a minimum of T2 in trainval.", ""]
    return ["T2 (non-degraded) in trainval against floor_k:", "", *_table(
        ["task type", "floor_k", "trainval T2", "met"],
        [[t, f["floor"], f["trainval_t2"], "yes" if f["trainval_t2"] >= f["floor"] else "no"]
         for t, f in sorted(floors.items())])]


def _power(m: dict[str, Any]) -> list[str]:
    power = m.get("power") or {}
    rows = [[p, power[p]["questions"], power[p]["videos"], power[p]["discordance"],
             power[p]["design_effect"],
             "none" if power[p]["mde"] is None else f"{100 * power[p]['mde']:.2f}"]
            for p in ("validation", "test") if p in power]
    note = [f"Discordance: {power['validation']['discordance_source']}.", ""] if rows else []
    return [*_table(["pool", "questions", "videos", "discordance", "design effect",
                     "detectable gain (pp)"], rows), *note,
            f"Validation holds {m['validation_wrong']} baseline-wrong questions "
            f"(val_wrong_min {m['val_wrong_min']}).", ""]


def _judge(card: CardData) -> list[str]:
    j, comps = card.judge, card.manifest["fingerprint_components"]
    shown = [[k, f"`{v}`" if isinstance(v, str) else f"`{v!r}`"] for k, v in comps.items()]
    usage = [["diagnoses", j["diagnoses"]], ["degraded", j["degraded"]],
             ["endpoint calls", j["calls"]], ["prompt tokens", j["prompt_tokens"]],
             ["completion tokens", j["completion_tokens"]]]
    if "cost_usd_at_most" in j:
        usage.append(["cost (USD, at most)", j["cost_usd_at_most"]])
    agreement = (["Agreement: " + card.agreement["line"], ""] if card.agreement else
                 [f"Agreement: not measured ({config_key('compare_with')}, `split-assets "
                  "agreement`).", ""])
    return [*_table(["component", "value"], shown), *_table(["", ""], usage), *agreement]


def _ledger(card: CardData) -> list[str]:
    limit = card.test_budget.get("budget")  # the shared budget a look is held to now
    rows = [[p, card.looks.get(p, {}).get("looks", 0), card.looks.get(p, {}).get("repeats", 0)]
            for p in ("validation", "test")]
    return ["Looks are distinct answers evaluated on a pool; repeats, those of them evaluated "
            "again (each counted once).", "", *_table(["pool", "looks", "repeats"], rows),
            f"Test looks allowed: {limit if limit is not None else 'no limit set'}.", ""]


def as_html(markdown: str, out: Path, figures: Sequence[Figure] = ()) -> str:
    """The Markdown as one HTML page: headings, lists, tables, emphasis; each figure's PNG
    embedded as a data URI, so the page stands alone."""
    body: list[str] = []
    table: list[str] = []
    listing = False
    points = {f"{FIGURES}/{f.stem}.png": f.points for f in figures}
    for line in [*markdown.splitlines(), ""]:
        if line.startswith("|"):
            table.append(line)
            continue
        if table:
            body.append(_html_table(table))
            table = []
        if line.startswith("- ") != listing:
            listing = not listing
            body.append("<ul>" if listing else "</ul>")
        body.append(_html_line(line, out, points))
    style = ("body{font-family:system-ui,sans-serif;max-width:72rem;margin:2rem auto;"
             "padding:0 1rem;color:#222}table{border-collapse:collapse;margin:.5rem 0 1rem}"
             "td,th{border:1px solid #ccc;padding:.2rem .5rem;font-size:.9rem}"
             "th{background:#f4f4f4}img{max-width:100%}code{font-size:.85rem}")
    title = html.escape(markdown.splitlines()[0].lstrip("# "))
    return (f"<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{title}</title><style>{style}</style></head><body>\n"
            + "\n".join(b for b in body if b) + "\n</body></html>\n")


def _inline(text: str) -> str:
    text = html.escape(text)
    text = re.sub(r"`([^`]*)`", r"<code>\1</code>", text)
    text = re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", text)
    return re.sub(r"\*([^*]+)\*", r"<em>\1</em>", text)


def _html_line(line: str, out: Path, points: dict[str, int]) -> str:
    if line.startswith("#"):
        level = len(line) - len(line.lstrip("#"))
        return f"<h{level}>{_inline(line[level:].strip())}</h{level}>"
    image = re.fullmatch(r"!\[(.*)\]\((.*\.png)\)", line)
    if image:
        data = base64.b64encode((out / image[2]).read_bytes()).decode("ascii")
        return (f"<figure><img alt=\"{html.escape(image[1])}\" "  # its data points, for tests
                f"data-points=\"{points.get(image[2], '')}\" "
                f"src=\"data:image/png;base64,{data}\"></figure>")
    if line.startswith("- "):
        return f"<li>{_inline(line[2:])}</li>"
    if line == "---":
        return "<hr>"
    if line.startswith("> "):  # a warning, at the top
        return ("<p style=\"border-left:4px solid #c60;background:#fff4e5;padding:.4rem "
                f".7rem\">{_inline(line[2:])}</p>")
    return f"<p>{_inline(line)}</p>" if line.strip() else ""


def _html_table(lines: list[str]) -> str:
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in lines]
    head, rows = cells[0], cells[2:]
    th = "".join(f"<th>{_inline(c)}</th>" for c in head)
    trs = "".join("<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in row) + "</tr>"
                  for row in rows)
    return f"<table><thead><tr>{th}</tr></thead><tbody>{trs}</tbody></table>"
