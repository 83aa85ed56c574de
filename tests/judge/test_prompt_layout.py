"""The prompt layout for providers' prefix caches: everything that does not depend on the case
first and identical in every call, the case's values last; nothing of the templates or the case
lost on the way. Cached tokens the endpoint reports are recorded per call."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest
from conftest import edit_config, kv
from helpers.openai_workspace import run_diagnosis

from split_assets.app.session import Session
from split_assets.diagnosis.cases import CaseSource
from split_assets.diagnosis.plan import wrong_to_diagnose
from split_assets.judge.prompts import load_templates
from split_assets.judge.render import (
    CASE_HEADING,
    case_values,
    render_messages,
    templates_for,
    used_values,
)
from testkit.llm_server import FakeLLM

PLACEHOLDER = re.compile(r"\{\{\s*[a-z_]+\s*\}\}")


def _cases_and_templates(config: Path, context: str = "full"):  # noqa: ANN202
    edit_config(config, diag={"context": context})
    ws = Session.open(config)
    wrong = wrong_to_diagnose(ws.inputs.predictions)
    templates = load_templates(ws.loaded.paths.prompts_dir, templates_for(context))
    return list(CaseSource(ws.inputs, wrong).cases(wrong)), templates


@pytest.mark.parametrize("context", ["full", "answer_only"])
def test_every_template_text_and_every_case_value_is_in_the_prompt(small_workspace: Path,
                                                                    context: str) -> None:
    cases, templates = _cases_and_templates(small_workspace, context)
    case = max(cases, key=lambda c: len(c.trace or []))
    prompt = "\n".join(m["content"] for m in render_messages(templates, case, context))
    for name in templates_for(context):
        for piece in PLACEHOLDER.split(templates[name]):
            assert piece.strip() in prompt, f"{name}: {piece.strip()[:60]!r} lost"
    values = case_values(case)
    for name in used_values(templates, context):
        assert f"<{name}>\n{values[name]}\n</{name}>" in prompt  # each value, once, tagged
        assert prompt.count(values[name]) >= 1
    assert "{{" not in prompt


def test_two_cases_share_everything_up_to_the_first_case_value(small_workspace: Path) -> None:
    cases, templates = _cases_and_templates(small_workspace)
    a, b = (render_messages(templates, c, "full") for c in cases[:2])
    assert a[0] == b[0]  # the system message is the same in every call
    first_value = f"{CASE_HEADING}\n\n<{used_values(templates, 'full')[0]}>\n"
    head = a[1]["content"][:a[1]["content"].index(first_value) + len(first_value)]
    assert b[1]["content"].startswith(head)
    # ... and the case makes up only the tail of the prompt
    total = len(a[0]["content"]) + len(a[1]["content"])
    assert (len(a[0]["content"]) + len(head)) / total > 0.6


def test_cached_tokens_the_endpoint_reports_are_recorded_per_call(openai_config: Path,
                                                                  server: FakeLLM,
                                                                  run_cli) -> None:  # noqa: ANN001
    from dagster import AssetKey, DagsterInstance

    code, _, err = run_cli("run", "--config", str(openai_config))
    assert code == 0, err
    with sqlite3.connect(openai_config.parent / "signals.db") as conn:
        cached = [r[0] for r in conn.execute(
            "SELECT cached_tokens FROM llm_calls WHERE status = 'ok' ORDER BY rowid")]
        prompt = conn.execute("SELECT SUM(prompt_tokens) FROM llm_calls").fetchone()[0]
    assert cached[0] == 0 and all(c > 0 for c in cached[1:])  # the first call fills the cache
    meta = DagsterInstance.get().get_latest_materialization_event(
        AssetKey("diagnosis_signals")).asset_materialization.metadata
    assert meta["cached_prompt_tokens"].value == sum(cached)
    assert meta["cached_share"].value == pytest.approx(sum(cached) / prompt, abs=1e-4)
    assert meta["cached_share"].value > 0.5
    assert meta["repairs"].value == 0 and meta["degraded"].value == 0


def test_dry_run_splits_the_tokens_and_prices_them(openai_config: Path, server: FakeLLM,
                                                   run_cli) -> None:  # noqa: ANN001
    code, out, err = run_cli("run", "--config", str(openai_config), "--dry-run")
    plan = kv(out)
    assert code == 0, err
    prefix = int(plan["estimated_prompt_tokens_cacheable_prefix"])
    case = int(plan["estimated_prompt_tokens_case"])
    completion = int(plan["estimated_completion_tokens"])
    assert prefix > case > 0 and completion > 0
    assert prefix + case + completion == int(plan["estimated_tokens"])
    assert "estimated_cost_usd" not in plan  # no price, no cost
    edit_config(openai_config, diag={"openai": {"price": {
        "input": 2.0, "cached_input": 0.5, "output": 8.0}}})
    code, out, err = run_cli("run", "--config", str(openai_config), "--dry-run")
    priced = kv(out)
    assert code == 0, err
    assert priced["fingerprint"] == plan["fingerprint"]  # the price is not fingerprinted
    full = (prefix + case) * 2.0 + completion * 8.0
    assert float(priced["estimated_cost_usd_no_cache"]) == pytest.approx(full / 1e6, abs=1e-4)
    assert float(priced["estimated_cost_usd"]) < float(priced["estimated_cost_usd_no_cache"])
    assert run_diagnosis  # the helper module is shared with test_openai_judge.py


def test_the_dry_run_estimates_without_a_key(openai_config: Path, server: FakeLLM, run_cli,
                                              monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    """Nothing is sent by the estimate: the key is needed only by the run itself."""
    edit_config(openai_config, diag={"openai": {"price": {
        "input": 2.0, "cached_input": 0.5, "output": 8.0}}})
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    code, out, err = run_cli("run", "--config", str(openai_config), "--dry-run")
    assert code == 0, err
    plan = kv(out)
    assert float(plan["estimated_cost_usd"]) > 0
    assert plan["source.OPENAI_API_KEY"].startswith("unset")
    assert not server.keys  # nothing was sent
    code, out, err = run_cli("run", "--config", str(openai_config))
    assert code == 2 and "OPENAI_API_KEY is not set" in err
