"""The one table from the config parameters an error names to their keys in
``video_split.yaml``: the core says which parameter (``config_key("signals_db")``), this table says
where the user sets it, so a key that moves is changed here once (``tests/settings`` checks
every key against the config's models; ``tests/test_layout.py`` that no core module spells one
itself)."""

from __future__ import annotations

KEYS: dict[str, str] = {
    # paths
    "questions_dir": "paths.questions_dir",
    "harness_db": "paths.harness_db",
    "store_dir": "paths.store_dir",
    "signals_db": "paths.signals_db",
    "out_dir": "paths.out_dir",
    # video_split
    "baseline_run_id": "video_split.baseline_run_id",
    "balance": "video_split.balance",
    "difficulty_edges": "video_split.difficulty_edges",
    "difficulty_field": "video_split.difficulty_field",
    "floor_k": "video_split.floor_k",
    "floor_share": "video_split.floor_share",
    "balance_runs": "video_split.balance_runs",
    # diag
    "judge": "diag.judge",
    "model": "diag.model",
    "context": "diag.context",
    "prompts_dir": "diag.prompts_dir",
    "reference_runs": "diag.reference_runs",
    "compare_with": "diag.compare_with",
    "skills_version": "diag.skills_version",
    "breaker_threshold": "diag.openai.breaker_threshold",
    "response_format": "diag.openai.response_format",
    # evaluation
    "candidates": "evaluation.candidates",
    "control_run": "evaluation.control_run",
    "discordance": "evaluation.discordance",
    "test_looks_max": "evaluation.test_looks_max",
}


def config_key(parameter: str) -> str:
    """The YAML key of ``parameter`` (a KeyError is a bug: add the parameter to ``KEYS``)."""
    return KEYS[parameter]
