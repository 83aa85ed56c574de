"""The card's first sections (issue 46): the claims on test as Markdown and as a booktabs
LaTeX table (``split_card.tex``, ready for ``\\input``), the validation leaderboard as the
Ladder released it, and where the baseline and the claimed candidates came from."""

from __future__ import annotations

import re
from typing import Any

from split_assets.config_keys import config_key
from split_assets.evaluation.claims import ALPHA
from split_assets.report.card_data import CardData

CARD_TEX, POOL_IDS = "split_card.tex", "pool_ids.json"
HEADER = ["look", "candidate", "n", "against", "reference acc", "candidate acc",
          "gain pp [95 % CI]", "p exact", "mid-p", "p one-sided", "threshold", "verdict",
          "within budget"]
PROVENANCE = (("harness", "harness"), ("version", "harness_version"), ("model", "model"),
              ("model args", "model_args"), ("task", "task"), ("date", "date"))


def _p(value: Any) -> str:
    return "—" if value is None else f"{value:.4g}"


def _acc(value: Any) -> str:
    return "—" if value is None else f"{value:.4f}"


def gain_text(row: dict[str, Any]) -> str:
    """The gain in pp with its 95 % cluster CI, as ``compare`` prints them."""
    if row.get("gain") is None:
        return "—"
    ci = row.get("gain_ci95")
    shown = f" [{100 * ci[0]:+.2f}, {100 * ci[1]:+.2f}]" if ci else ""
    return f"{100 * row['gain']:+.2f}{shown}"


def _candidate(row: dict[str, Any]) -> str:
    also = [r for r in row["runs"] if r != row["candidate"]]
    return row["candidate"] + (f" (also {', '.join(also)})" if also else "")


def _cells(row: dict[str, Any]) -> list[str]:
    within = {None: "no budget", True: "yes", False: "no"}[row["within_budget"]]
    return [str(row["look"]), _candidate(row), str(row.get("n") or "—"),
            row.get("against", "—"), _acc(row.get("reference_accuracy")),
            _acc(row.get("candidate_accuracy")), gain_text(row), _p(row.get("p_exact")),
            _p(row.get("p_mid")), _p(row.get("p_one_sided")), row["threshold"], row["verdict"],
            within]


def budget_line(card: CardData) -> str:
    budget, by = card.test_budget.get("budget"), card.test_budget.get("declared_by")
    if budget is None:
        return (f"No {config_key('test_looks_max')} is declared: the looks are tested together "
                f"(Holm over every look so far, alpha {ALPHA}); a claim made look by look is "
                "only valid with a budget declared before the first look.")
    return (f"{config_key('test_looks_max')} {budget}" + (f" (declared by {by})" if by else "")
            + f": each look is tested one-sided at {ALPHA}/{budget} = {ALPHA / budget:.4g}.")


def claims_section(card: CardData, table: Any) -> list[str]:
    """``## Claims on test``: one row per look, then the validation leaderboard."""
    out = ["## Claims on test", "", budget_line(card), ""]
    if card.claims:
        out += table(HEADER, [_cells(row) for row in card.claims])
        notes = [f"Look {row['look']}: {row['note']}." for row in card.claims if "note" in row]
        notes += [f"Look {row['look']} was evaluated again {row['repeats']} time(s) with the "
                  "same answers: repeats, folded into the look." for row in card.claims
                  if row["repeats"]]
        notes += [f"Look {row['look']} was made in workspace {row['workspace']} (one budget "
                  "per baseline on the Dagster instance)." for row in card.claims
                  if row.get("workspace")]
        notes += [f"Look {row['look']} was made by an optimizer's loop: {row['optimizer']}, "
                  f"program {_short(row.get('program_sha256'))}." for row in card.claims
                  if row.get("optimizer")]
        out += [line for note in notes for line in (note, "")]
    else:
        out += ["No look at test yet.", ""]
    out += ["### The validation leaderboard", ""]
    if card.leaderboard:
        looped = any(r.get("optimizer") for r in card.leaderboard)
        head = ["submission", "run", "leaderboard accuracy", "moved", "significant"]
        out += ["As the Ladder released it (a submission's own accuracy is never shown):", "",
                *table(head + (["optimizer", "program"] if looped else []),
                       [[r["submission"], r["run_id"], f"{r['leaderboard_accuracy']:.4f}",
                         "yes" if r["moved"] else "no", "yes" if r["significant"] else "no"]
                        + ([r.get("optimizer") or "", _short(r.get("program_sha256"))]
                           if looped else [])
                        for r in card.leaderboard])]
    else:
        out += ["No feedback submission yet (split-assets feedback).", ""]
    return out


def provenance_section(card: CardData, baseline: str, table: Any) -> list[str]:
    """Where the baseline and each claimed candidate came from, as read at import."""
    runs = [baseline, *dict.fromkeys(r["candidate"] for r in card.claims
                                     if r.get("source") != "export")]
    rows = []
    for run in runs:
        p = card.provenance.get(run, {})
        score = ", ".join(f"{k} {v:g}" for k, v in p.get("score", {}).items()) or "—"
        rows.append([run, "baseline" if run == baseline else "candidate",
                     *(str(p.get(key) or "—").replace("|", "/") for _, key in PROVENANCE),
                     score])
    return ["### The runs", "", *table(["run", "role", *(h for h, _ in PROVENANCE),
                                        "harness score"], rows)]


_TEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
        "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\^{}"}


def tex_escape(text: str) -> str:
    """``text`` safe in LaTeX's text mode."""
    return re.sub(r"[\\&%$#_{}~^]", lambda m: _TEX[m.group()], text)


def claims_tex(card: CardData, benchmark: str) -> str:
    """The claims as one booktabs table (``\\usepackage{booktabs}``; ``\\input`` it)."""
    split = card.manifest["split_id"]
    head = ["Look", "Candidate", "$n$", "Ref.\\ acc.", "Cand.\\ acc.",
            "Gain (pp) [95\\,\\% CI]", "$p$ exact", "mid-$p$", "$p$ one-sided", "Verdict"]
    lines = [f"% written by split-assets report: the claims on test of split {split} "
             f"({tex_escape(benchmark)})", "% needs \\usepackage{booktabs}",
             "\\begin{table}[ht]", "\\centering", "\\small",
             "\\begin{tabular}{rlrrrlrrrl}", "\\toprule", " & ".join(head) + " \\\\",
             "\\midrule"]
    for row in card.claims:
        cells = _cells(row)
        chosen = [cells[0], cells[1], cells[2], cells[4], cells[5], cells[6], cells[7],
                  cells[8], cells[9], cells[11]]
        lines.append(" & ".join(tex_escape(c).replace("—", "--") for c in chosen) + " \\\\")
    if not card.claims:
        lines.append("\\multicolumn{10}{l}{no look at test yet} \\\\")
    caption = tex_escape(budget_line(card))
    lines += ["\\bottomrule", "\\end{tabular}",
              f"\\caption{{Claims on the test pool of split \\texttt{{{split}}} of "
              f"{tex_escape(benchmark)}, one row per look. {caption}}}",
              f"\\label{{tab:claims-{split}}}", "\\end{table}", ""]
    return "\n".join(lines)


def _short(digest: str | None) -> str:
    """A program's digest as the card shows it (the ledger keeps it whole)."""
    return f"sha256:{digest[:12]}" if digest else ""
