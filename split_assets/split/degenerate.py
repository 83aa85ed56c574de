"""A split that is valid but not outcome-driven (issue 45): every check passes, yet trainval is
pulled toward nothing. Three causes, each a one-line warning that names its fix:

- no T2 at all: no wrong answer was diagnosed a persistent defect, so train teaches nothing;
- no floor applies: ``floor_k`` is empty (or all zero) and no ``floor_share`` is set;
- the answer-only rules judge with fewer than two reference runs: it cannot tell a defect from
  a lapse (with none, every wrong answer is T1).

``frozen_pools`` writes them into the manifest (``warnings``), its ``floors_met`` check is a
WARN that says them, ``split-assets run`` ends with them, the split card opens with them and
``export-signals`` prints them on stderr."""

from __future__ import annotations

from split_assets.config_keys import config_key
from split_assets.split.problem import SplitProblem

IMPORT_REFERENCE = ("import other models' runs of this benchmark as references (split-assets "
                    "import ... --reference FILE, or --role reference)")


def degenerate_warnings(problem: SplitProblem, *, answer_only_rules: bool,
                        references: int) -> list[str]:
    """The warnings of a split that is not outcome-driven (empty: it is)."""
    out = []
    wrong = sum(not q.correct for q in problem.questions)
    t2 = sum(q.is_floor_t2 for q in problem.questions)
    if answer_only_rules and references < 2:
        out.append(f"the answer-only rules judge has {references} reference run(s) in "
                   f"{config_key('reference_runs')}: with fewer than 2 it cannot tell a "
                   f"persistent defect (T2) from a lapse (T1); {IMPORT_REFERENCE}")
    if t2 == 0:
        fix = (IMPORT_REFERENCE if answer_only_rules
               else f"check the judge ({config_key('judge')}) and its context")
        out.append(f"no T2 at all: none of the {wrong} wrong answers is a non-degraded "
                   f"persistent defect, so the split is not outcome-driven and train teaches "
                   f"nothing; {fix}")
    if not any(problem.floors.values()):
        if problem.selection.floor_share is None:
            out.append(f"no T2 floor applies ({config_key('floor_k')} is empty and no "
                       f"{config_key('floor_share')} is set): trainval is not pulled toward "
                       f"defects; set {config_key('floor_share')} (e.g. 0.7)")
        elif t2:
            out.append(f"no T2 floor applies: {config_key('floor_share')} "
                       f"{problem.selection.floor_share} rounds every task type's floor down "
                       f"to 0; raise it (e.g. 0.7)")
    return out
