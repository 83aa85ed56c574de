"""The fingerprint: stable across unrelated changes, changed by any component."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import edit_config, kv

from split_assets.judge.prompts import TEMPLATE_NAMES, load_templates, templates_digest
from split_assets.settings import load_config
from split_assets.workspace.fingerprint import compute_fingerprint, source_digest


def fp(config: Path) -> str:
    return compute_fingerprint(load_config(config)).key


def test_format_and_stability(small_workspace: Path) -> None:
    key = fp(small_workspace)
    assert key.startswith("fp-") and len(key) == 15
    assert fp(small_workspace) == key


def test_data_and_split_settings_do_not_change_it(small_workspace: Path) -> None:
    key = fp(small_workspace)
    edit_config(small_workspace, video_split={"seed": 99, "n_trainval": 30},
                diag={"concurrency": 2})
    (small_workspace.parent / "harness.db").unlink()  # data is not a component
    assert fp(small_workspace) == key


@pytest.mark.parametrize(("section", "change"), [
    ("diag", {"model": "rules-v2"}),
    ("diag", {"prompt_version": "v2"}),
    ("diag", {"rules": {"step_limit_stop_reasons": ["max_steps", "timeout"]}}),
])
def test_each_component_changes_it(small_workspace: Path, section: str, change: dict) -> None:
    key = fp(small_workspace)
    edit_config(small_workspace, **{section: change})
    assert fp(small_workspace) != key


def test_components_are_recorded(small_workspace: Path) -> None:
    components = compute_fingerprint(load_config(small_workspace)).components
    assert components["judge"] == "rules" and components["context"] == "full"
    assert components["settings"] == {"open_tool": "open_node",
                                      "step_limit_stop_reasons": ["max_steps"]}


def test_judge_source_digest_follows_content_not_checkout(tmp_path: Path) -> None:
    src = Path(__file__).parents[2] / "split_assets" / "judge" / "rules.py"
    copy = tmp_path / "rules.py"
    shutil.copy(src, copy)
    assert source_digest([copy]) == source_digest([src])
    copy.write_bytes(src.read_bytes().replace(b"\n", b"\r\n"))  # a Windows checkout
    assert source_digest([copy]) == source_digest([src])
    copy.write_text(src.read_text() + "\n# changed\n")
    assert source_digest([copy]) != source_digest([src])


def test_prompt_templates_digest_and_errors(tmp_path: Path) -> None:
    shipped = Path(__file__).parents[2] / "prompts"
    prompts = tmp_path / "prompts"
    shutil.copytree(shipped, prompts)
    base = templates_digest(load_templates(prompts, TEMPLATE_NAMES))
    (prompts / "missed_nodes.md").write_text("changed\n")
    assert templates_digest(load_templates(prompts, TEMPLATE_NAMES)) != base
    (prompts / "missed_nodes.md").write_text("  \n")
    with pytest.raises(Exception, match="is empty"):
        load_templates(prompts, TEMPLATE_NAMES)
    (prompts / "missed_nodes.md").unlink()
    with pytest.raises(Exception, match="missing"):
        load_templates(prompts, TEMPLATE_NAMES)


def test_diff_names_what_differs_between_two_fingerprints(
        small_workspace: Path, run_cli: Callable[..., tuple[int, str, str]]) -> None:
    code, out, err = run_cli("run", "--config", str(small_workspace))
    assert code == 0, err
    old = kv(out)["fingerprint"]
    edit_config(small_workspace, diag={"prompt_version": "v2"})
    code, out, _ = run_cli("fingerprint", "--config", str(small_workspace))
    new = out.splitlines()[0]
    assert new != old
    code, out, err = run_cli("fingerprint", "--config", str(small_workspace), "--diff", old, new)
    assert code == 0, err
    assert out.strip().splitlines() == ["prompt_version: v1 -> v2"]
    code, out, _ = run_cli("fingerprint", "--config", str(small_workspace), "--diff", new, new)
    assert "the same components" in out
    code, _, err = run_cli("fingerprint", "--config", str(small_workspace), "--diff", old,
                           "fp-000000000000")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "fp-000000000000 is neither the config's" in err
