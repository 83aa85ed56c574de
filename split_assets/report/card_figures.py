"""The split card's figures (matplotlib, drawn off-screen): each written as PNG (for the HTML
page, embedded, and the Markdown file) and SVG (for a paper). ``draw`` returns each
``Figure``, in the card's order; a figure with no data point is replaced by one sentence."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from split_assets.report.card_data import TIERS, CardData
from split_assets.split.layout import POOLS

COLORS = {"train": "#4C72B0", "validation": "#DD8452", "test": "#55A868", "global": "#8C8C8C",
          "T0": "#BBBBBB", "T1": "#F2B701", "T2": "#C44E52", "floor": "#222222"}
EMPTY = {"floors": "No task type has a non-degraded T2 in trainval and no floor is set, so "
                   "there is nothing to draw.",
         "tiers": "No pool holds a wrong answer, so there is nothing to draw.",
         "power": "No pool has a detectable-gain figure, so there is nothing to draw."}


@dataclass(frozen=True)
class Figure:
    """One figure of the card: its file stem, caption, how many data points it drew (0: not
    written; the card shows ``empty`` instead)."""

    stem: str
    caption: str
    points: int
    empty: str = "There is nothing to draw."


def draw(card: CardData, folder: Path) -> list[Figure]:
    """Every figure the card's data allows, as ``folder/<stem>.png`` and ``.svg``; a figure
    that would draw no data point is not written."""
    import matplotlib

    matplotlib.use("Agg")  # no screen; set before pyplot is imported
    folder.mkdir(parents=True, exist_ok=True)
    makers: list[tuple[str, str, Callable[[Any, CardData], None]]] = [
        ("pool_sizes", "Pool sizes in videos and questions.", _sizes),
        ("task_types", "Share of each task type per pool against the whole benchmark.",
         lambda ax, c: _shares(ax, c, "task_type")),
        ("difficulty", "Share of each difficulty level per pool against the whole benchmark.",
         lambda ax, c: _shares(ax, c, "difficulty")),
        ("accuracy", "Baseline accuracy per pool against the whole benchmark.", _accuracy),
        ("tiers", "Wrong answers by tier per pool (T0 infrastructure, T1 lapse, T2 "
                  "persistent defect).", _tiers),
        ("floors", "Non-degraded T2 per task type in trainval against floor_k.", _floors),
        ("power", "Minimum detectable accuracy gain (80 % power, alpha 0.05) per pool.",
         _power)]
    if card.leaderboard:
        makers.append(("leaderboard", "The Ladder's released accuracy at each feedback "
                                      "submission (filled: the leaderboard moved).",
                       _leaderboard))
    out = []
    for stem, caption, make in makers:
        points = _save(folder, stem, make, card)
        out.append(Figure(stem, caption, points, EMPTY.get(stem, "There is nothing to draw.")))
    return out


def _save(folder: Path, stem: str, make: Callable[[Any, CardData], None],
          card: CardData) -> int:
    """Draw one figure; write it when it holds data; its data points."""
    import matplotlib.pyplot as plt

    wide = stem in ("task_types", "floors")
    fig, ax = plt.subplots(figsize=(9.0 if wide else 6.4, 4.2 if wide else 3.4))
    try:
        make(ax, card)
        points = data_points(ax)
        for ext in ("png", "svg"):
            (folder / f"{stem}.{ext}").unlink(missing_ok=True)  # an earlier card's
        if points:
            ax.spines[["top", "right"]].set_visible(False)
            fig.tight_layout()
            fig.savefig(folder / f"{stem}.png", dpi=120, metadata={"Software": None})
            fig.savefig(folder / f"{stem}.svg", metadata={"Date": None})
        return points
    finally:
        plt.close(fig)


def data_points(ax: Any) -> int:
    """The data a drawn axes shows: bars of non-zero height, points of lines and scatters,
    and line segments above zero (floor marks)."""
    from matplotlib.collections import LineCollection, PathCollection

    n = sum(1 for p in ax.patches if getattr(p, "get_height", lambda: 0)() != 0)
    n += sum(len(line.get_xdata()) for line in ax.lines)
    for c in ax.collections:
        if isinstance(c, PathCollection):
            n += len(c.get_offsets())
        elif isinstance(c, LineCollection):
            n += sum(1 for seg in c.get_segments() if len(seg) and max(seg[:, 1]) > 0)
    return n


def _grouped(ax: Any, labels: list[str], series: dict[str, list[float]]) -> None:
    width = 0.8 / max(1, len(series))
    for i, (name, values) in enumerate(series.items()):
        xs = [x + (i - (len(series) - 1) / 2) * width for x in range(len(labels))]
        ax.bar(xs, values, width, label=name, color=COLORS.get(name))
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, rotation=35 if len(labels) > 4 else 0,
                       ha="right" if len(labels) > 4 else "center", fontsize=8)
    ax.legend(fontsize=8, frameon=False)


def _sizes(ax: Any, card: CardData) -> None:
    counts = card.manifest["counts"]
    _grouped(ax, ["videos", "questions"],
             {name: [counts[name]["videos"], counts[name]["questions"]] for name in POOLS})
    ax.set_ylabel("count")


def _shares(ax: Any, card: CardData, dimension: str) -> None:
    dist = card.manifest["distributions"]
    total = {k: sum(dist[p][dimension].get(k, 0) for p in POOLS)
             for p in POOLS for k in dist[p][dimension]}
    labels = sorted(total)
    n = sum(total.values()) or 1
    series = {"global": [total[k] / n for k in labels]}
    for name in POOLS:
        size = sum(dist[name][dimension].values()) or 1
        series[name] = [dist[name][dimension].get(k, 0) / size for k in labels]
    _grouped(ax, labels, series)
    ax.set_ylabel("share of the pool's questions")


def _accuracy(ax: Any, card: CardData) -> None:
    acc = card.manifest["baseline_accuracy"]
    names = ["global", *POOLS]
    ax.bar(names, [acc[k] for k in names], color=[COLORS[k] for k in names])
    ax.set_ylim(0.0, 1.0)  # from 0: a bar's height is the accuracy
    ax.set_ylabel("baseline accuracy")


def _tiers(ax: Any, card: CardData) -> None:
    counts = card.manifest["tier_counts"]
    bottom = [0] * len(POOLS)
    for tier in TIERS:
        values = [counts[p].get(tier, 0) for p in POOLS]
        ax.bar(POOLS, values, bottom=bottom, label=tier, color=COLORS[tier])
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    ax.set_ylabel("wrong answers")
    ax.legend(fontsize=8, frameon=False)


def _floors(ax: Any, card: CardData) -> None:
    floors = card.manifest["floors"]
    types = card.task_types
    got = [sum(card.by_type[p].get(t, {}).get("T2", 0) for p in ("train", "validation"))
           for t in types]
    ax.bar(range(len(types)), got, color=COLORS["T2"], label="trainval T2")
    labelled = False
    for i, t in enumerate(types):
        if t in floors:
            ax.hlines(floors[t]["floor"], i - 0.4, i + 0.4, color=COLORS["floor"],
                      label=None if labelled else "floor_k")
            labelled = True
    ax.set_xticks(range(len(types)))
    ax.set_xticklabels(types, rotation=35, ha="right", fontsize=8)
    ax.legend(fontsize=8, frameon=False)


def _power(ax: Any, card: CardData) -> None:
    power = card.manifest.get("power") or {}
    names = [p for p in ("validation", "test") if p in power and power[p]["mde"] is not None]
    ax.bar(names, [100 * power[p]["mde"] for p in names], color=[COLORS[p] for p in names])
    ax.set_ylabel("detectable gain (pp)")
    if not names:
        ax.text(0.5, 0.5, "no power figures", ha="center", transform=ax.transAxes)


def _leaderboard(ax: Any, card: CardData) -> None:
    """Every submission's released score (filled where the leaderboard moved), joined as the
    step the leaderboard is."""
    board = card.leaderboard
    xs = [row["submission"] for row in board]
    ys = [row["leaderboard_accuracy"] for row in board]
    moved = [row["moved"] for row in board]
    ax.step(xs, ys, where="post", color=COLORS["validation"], alpha=0.6)
    for shown, label, face in ((True, "moved", COLORS["validation"]), (False, "held", "white")):
        chosen = [i for i, m in enumerate(moved) if m == shown]
        if chosen:
            ax.scatter([xs[i] for i in chosen], [ys[i] for i in chosen], facecolors=face,
                       edgecolors=COLORS["validation"], zorder=3, label=label)
    ax.set_xticks(xs if len(xs) <= 12 else xs[:: max(1, len(xs) // 12)])
    ax.set_xlim(0.5, len(xs) + 0.5)
    ax.set_ylim(max(0.0, min(ys) - 0.05), min(1.0, max(ys) + 0.05))
    ax.set_xlabel("submission")
    ax.set_ylabel("leaderboard accuracy (released)")
    ax.legend(fontsize=8, frameon=False)
