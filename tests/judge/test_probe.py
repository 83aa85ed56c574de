"""``split-assets judge probe`` against the test server in slot mode: the parallelism it
finds, the response formats it tells apart, the settings it writes, its one-line errors."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml
from conftest import edit_config, kv

from testkit.llm_server import FakeLLM
from testkit.slots import SlotModel

ERROR_LINE = re.compile(r"^error: .+ \(.+\): .+$")
KEY = "sk-probe-secret-42"


@pytest.fixture
def judge_config(small_workspace: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    return edit_config(small_workspace, diag={"judge": "openai", "model": "local-model"})


@contextmanager
def serving(monkeypatch: pytest.MonkeyPatch, slots: int, schema_mode: str = "enforce",
            base_s: float = 0.05) -> Iterator[FakeLLM]:
    """A server of ``slots`` slots: ``base_s`` a request plus its uncached prompt tokens."""
    model = SlotModel(slots, base_s, prompt_s_per_token=2e-5)
    with FakeLLM(slots=model, schema_mode=schema_mode) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        yield server


@pytest.mark.parametrize("slots", [1, 4, 16])
def test_the_probe_finds_the_servers_parallelism(judge_config: Path, run_cli,  # noqa: ANN001
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 slots: int) -> None:
    # a request long enough that 16 at once cost the test server and client little beside it
    with serving(monkeypatch, slots, base_s=0.1 if slots < 16 else 0.2) as server:
        code, out, err = run_cli("judge", "probe", "--config", str(judge_config))
    assert code == 0, err
    found = kv(out)
    assert int(found["parallelism"]) == slots
    assert found["recommended_concurrency"] == found["parallelism"]
    assert found["model"] == "fake-model-1"  # what it answers as, whatever was asked
    assert (found["json_schema"], found["recommended_response_format"]) == \
        ("enforced", "json_schema")
    assert found["cached_tokens"] == "yes" and float(found["prefix_reused"]) > 0.5
    assert int(found["calls"]) == len(server.requests)
    assert KEY not in out + err


@pytest.mark.parametrize(("mode", "says"), [("ignore", "accepted"), ("refuse", "refused")])
def test_a_server_that_does_not_enforce_json_schema_is_told_apart(
        judge_config: Path, run_cli, monkeypatch: pytest.MonkeyPatch,  # noqa: ANN001
        mode: str, says: str) -> None:
    with serving(monkeypatch, 1, schema_mode=mode):
        code, out, err = run_cli("judge", "probe", "--config", str(judge_config),
                                 "--max-parallel", "1")
    assert code == 0, err
    found = kv(out)
    assert found["json_schema"] == says and found["json_object"] == "accepted"
    assert found["recommended_response_format"] == "json_object"


def test_write_puts_the_settings_in_the_config_and_says_the_fingerprint_moved(
        judge_config: Path, run_cli, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    judge_config.write_text("# my workspace\n" + judge_config.read_text())
    code, before, _ = run_cli("fingerprint", "--config", str(judge_config))
    with serving(monkeypatch, 1):
        code, out, err = run_cli("judge", "probe", "--config", str(judge_config), "--write")
    assert code == 0, err
    diag = yaml.safe_load(judge_config.read_text())["diag"]
    assert diag["concurrency"] == 1 and diag["openai"]["response_format"] == "json_schema"
    assert diag["openai"]["timeout_s"] >= 60
    assert judge_config.read_text().startswith("# my workspace\n")  # comments kept
    code, after, _ = run_cli("fingerprint", "--config", str(judge_config))
    old, new = before.splitlines()[0], after.splitlines()[0]
    assert old != new and f"fingerprint {old} -> {new}" in err


def test_a_rejected_key_is_one_line_exit_2(judge_config: Path, run_cli,  # noqa: ANN001
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "bad-key")
    with serving(monkeypatch, 1) as server:
        code, out, err = run_cli("judge", "probe", "--config", str(judge_config))
    *said, error = err.strip().splitlines()
    assert code == 2 and out == "" and ERROR_LINE.match(error), err
    assert all(line.startswith("judge probe: ") for line in said)  # what it was about to do
    assert "401" in error and "OPENAI_API_KEY" in error and "bad-key" not in err
    assert len(server.requests) == 1


def test_the_rules_judge_has_nothing_to_probe(small_workspace: Path, run_cli) -> None:  # noqa: ANN001
    code, out, err = run_cli("judge", "probe", "--config", str(small_workspace))
    assert code == 2 and ERROR_LINE.match(err.strip()) and "diag.judge is rules" in err
