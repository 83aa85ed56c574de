"""The openai judge's prompts read the open-node tool from ``diag.rules.open_tool``, as the
rules judge does; the default keeps the fingerprint's settings as they were."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from conftest import edit_config

from split_assets.app.session import Session
from split_assets.diagnosis.cases import CaseSource
from split_assets.diagnosis.plan import wrong_to_diagnose
from split_assets.judge.render import case_values


def _renamed(case, tool: str):  # noqa: ANN001, ANN202 - JudgeCase
    steps = [dataclasses.replace(s, content={**s.content, "tool": tool})
             if s.kind == "tool_call" and s.content.get("tool") == "open_node" else s
             for s in case.trace]
    return dataclasses.replace(case, trace=steps)


def test_opened_nodes_follow_the_open_tool(small_workspace: Path) -> None:
    ws = Session.open(small_workspace)
    wrong = wrong_to_diagnose(ws.inputs.predictions)
    cases = [c for c in CaseSource(ws.inputs, wrong).cases(wrong)
             if case_values(c)["opened_nodes"] != "(none opened)"]
    assert cases
    case = cases[0]
    opened = case_values(case)["opened_nodes"]
    assert case_values(case, "zoom_node")["opened_nodes"] == "(none opened)"
    assert case_values(_renamed(case, "zoom_node"), "zoom_node")["opened_nodes"] == opened


def test_open_tool_in_the_openai_fingerprint_only_when_not_the_default(
        small_workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    edit_config(small_workspace, diag={"judge": "openai", "model": "m"})
    default = Session.open(small_workspace).partition.fingerprint
    assert "open_tool" not in default.components["settings"]
    edit_config(small_workspace, diag={"rules": {"open_tool": "zoom_node"}})
    other = Session.open(small_workspace).partition.fingerprint
    assert other.components["settings"]["open_tool"] == "zoom_node"
    assert other.key != default.key
