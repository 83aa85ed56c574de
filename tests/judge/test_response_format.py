"""``diag.openai.response_format``: json_schema sends the Diagnosis model's strict schema;
``json_mode`` of earlier configs still reads (and keeps its fingerprint); an endpoint that
refuses the mode stops the run in one line, with no fallback to another mode."""

from __future__ import annotations

from pathlib import Path

import yaml
from conftest import edit_config

from split_assets.app.session import Session
from split_assets.judge.schema import Diagnosis
from testkit.llm_server import Action, FakeLLM


def _with_openai_key(config: Path, key: str, value: object) -> None:
    """Write ``diag.openai.<key>`` as given (edit_config merges, this replaces the section)."""
    data = yaml.safe_load(config.read_text(encoding="utf-8"))
    data["diag"]["openai"] = {k: v for k, v in data["diag"]["openai"].items()
                              if k not in ("json_mode", "response_format")} | {key: value}
    config.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


def test_json_mode_of_earlier_configs_keeps_its_fingerprint(openai_config: Path,
                                                            run_cli) -> None:  # noqa: ANN001
    keys = {}
    for key, value in (("json_mode", True), ("response_format", "json_object"),
                       ("json_mode", False), ("response_format", "text"),
                       ("response_format", "json_schema")):
        _with_openai_key(openai_config, key, value)
        keys[key, value] = Session.open(openai_config).partition.fingerprint
    assert keys["json_mode", True].key == keys["response_format", "json_object"].key
    assert keys["json_mode", False].key == keys["response_format", "text"].key
    assert keys["json_mode", True].components["settings"]["json_mode"] is True
    assert len({f.key for f in keys.values()}) == 3
    data = yaml.safe_load(openai_config.read_text(encoding="utf-8"))
    data["diag"]["openai"]["json_mode"] = True  # both spellings at once
    openai_config.write_text(yaml.safe_dump(data), encoding="utf-8")
    code, _, err = run_cli("run", "--config", str(openai_config), "--dry-run")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "json_mode and response_format both set" in err


def test_json_schema_sends_the_strict_diagnosis_schema(openai_config: Path, server: FakeLLM,
                                                       run_cli) -> None:  # noqa: ANN001
    edit_config(openai_config, diag={"openai": {"response_format": "json_schema"}})
    code, _, err = run_cli("run", "--config", str(openai_config))
    assert code == 0, err
    sent = server.requests[0]["response_format"]
    assert sent["type"] == "json_schema" and sent["json_schema"]["strict"] is True
    schema = sent["json_schema"]["schema"]
    assert schema["additionalProperties"] is False
    assert sorted(schema["required"]) == sorted(Diagnosis.model_fields)
    assert "maxLength" not in str(schema)  # strict mode refuses it; pydantic checks it after


def test_an_endpoint_refusing_the_mode_stops_the_run_in_one_line(openai_config: Path,
                                                                 server: FakeLLM,
                                                                 run_cli) -> None:  # noqa: ANN001
    edit_config(openai_config, diag={"openai": {"response_format": "json_schema"}})
    server.script(*[Action("status", status=400, content="Invalid parameter: 'response_format' "
                           "of type 'json_schema' is not supported with this model.")] * 5)
    code, out, err = run_cli("run", "--config", str(openai_config))
    assert code == 2, out + err
    line = err.strip().splitlines()[-1]  # the step log above it, then the one error line
    assert line.startswith("error: the endpoint refused response_format json_schema (400: ")
    assert "diag.openai.response_format" in line and "json_object or text" in line
    assert "Traceback" not in err and "sk-test-secret-123" not in err
    assert len(server.requests) == 1  # no retry, no fallback to another mode
    # a 400 that says nothing of the format is the one question's failure, not the run's
    server.clear()
    edit_config(openai_config, diag={"openai": {"response_format": "json_object"}})
    server.script(Action("status", status=400, content="context length exceeded"))
    code, out, err = run_cli("run", "--config", str(openai_config))
    assert "response_format" not in err
