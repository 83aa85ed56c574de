"""The redactor of the judge's credentials: every form an echo takes, placeholders left alone,
the client's and the environment's secrets alike, API errors redacted in place."""

from __future__ import annotations

import base64
import json
import urllib.parse
from html import escape as html_escape

import httpx2
import openai
import orjson
import pytest

from split_assets.judge.chat_transport import client_redactor
from split_assets.lib.redact import (
    MARKER,
    Redactor,
    environment_redactor,
    environment_secrets,
    is_secret,
)

KEY = 'sk-a/b"c\\d&e<f>\'g-é-\U0001f511-Z7qT4wXk'


def _unicode_all(text: str) -> str:
    units = text.encode("utf-16-be")
    return "".join(f"\\u{int.from_bytes(units[i:i + 2], 'big'):04X}"
                   for i in range(0, len(units), 2))


@pytest.mark.parametrize("form", [
    KEY,
    json.dumps(KEY)[1:-1],  # \" \\ \u00e9 \ud83d\udd11
    json.dumps(KEY, ensure_ascii=False)[1:-1],
    json.dumps(KEY)[1:-1].replace("/", "\\/"),  # PHP's encoder
    _unicode_all(KEY),  # every character, upper-case hex
    json.dumps(json.dumps(KEY)[1:-1])[1:-1],  # a JSON answer inside a JSON record
    repr(KEY)[1:-1],
    ascii(KEY)[1:-1],  # \xe9 \U0001f511
    urllib.parse.quote(KEY, safe=""),
    html_escape(KEY),
    "".join(f"&#{ord(c)};" for c in KEY),
], ids=["raw", "json", "json-utf8", "json-slash", "unicode", "json-twice",
        "repr", "ascii", "percent", "html", "html-numeric"])
def test_every_form_of_the_key_is_redacted(form: str) -> None:
    redact = Redactor([KEY])
    text = f"before {form} after"
    assert redact(text) == f"before {MARKER} after"


def test_redacting_an_escaped_key_keeps_the_json_valid() -> None:
    redact = Redactor([KEY])
    for ensure_ascii in (True, False):
        answer = json.dumps({"rationale": f"x {KEY} y", "n": 1}, ensure_ascii=ensure_ascii)
        record = orjson.dumps({"text": answer}).decode()
        assert json.loads(redact(answer)) == {"rationale": f"x {MARKER} y", "n": 1}
        assert json.loads(json.loads(redact(record))["text"])["rationale"] == f"x {MARKER} y"


@pytest.mark.parametrize(("value", "secret"), [
    ("", False), ("EMPTY", False), ("sk-1234", False),  # shorter than 8
    ("anything", False), ("NotNeededAtAll", False),  # a word: letters only, under 16
    ("sk-no-key", True), ("12345678", True), ("abcdefghijklmnopqrst", True),
])
def test_placeholders_are_not_secrets(value: str, secret: bool) -> None:
    assert is_secret(value) is secret
    text = f"The agent found anything but the EMPTY box; {value}."
    assert (Redactor([value])(text) != text) is secret


def test_the_longer_credential_is_replaced_whole() -> None:
    redact = Redactor(["sk-live-abcdefgh", "Bearer sk-live-abcdefgh", "abcdefgh1"])
    assert redact("Authorization: Bearer sk-live-abcdefgh") == f"Authorization: {MARKER}"
    assert redact("sk-live-abcdefgh1") == f"{MARKER}1"
    assert not Redactor(["EMPTY", None, ""]) and Redactor([]).value({"a": ["b"]}) == {"a": ["b"]}


def test_client_and_environment_name_the_same_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    env = {"OPENAI_API_KEY": "sk-env-key-12345",
           "OPENAI_ADMIN_KEY": "sk-admin-key-6789",
           "OPENAI_CUSTOM_HEADERS": "X-Proxy-Token: Bearer pt-proxy-4242\nX-Title: demo",
           "OPENAI_BASE_URL": "https://tok%2Fuser:p%40ss-word-99@llm.example/v1"}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    client = openai.AsyncOpenAI()
    assert client_redactor(client).secrets == environment_redactor().secrets
    secrets = set(environment_secrets(env))
    assert {"sk-env-key-12345", "sk-admin-key-6789", "Bearer pt-proxy-4242", "pt-proxy-4242",
            "p@ss-word-99", "tok/user:p@ss-word-99",
            base64.b64encode(b"tok/user:p@ss-word-99").decode()} <= secrets
    redact = environment_redactor()
    assert redact("url https://tok%2Fuser:p%40ss-word-99@llm.example") == (
        f"url https://{MARKER}@llm.example")
    assert redact("demo") == "demo"  # a short header value is no secret


def test_an_api_error_is_redacted_in_place() -> None:
    request = httpx2.Request("POST", "http://127.0.0.1/v1/chat/completions")
    body = {"error": {"message": f"bad key Bearer {KEY}", "code": KEY, "param": None}}
    response = httpx2.Response(400, json=body, request=request)
    exc = openai.BadRequestError(f"Error code: 400 - {body['error']['message']}",
                                 response=response, body=body["error"])
    same = Redactor([KEY]).exception(exc)
    assert same is exc and isinstance(exc, openai.BadRequestError)
    assert exc.message == f"Error code: 400 - bad key Bearer {MARKER}" == str(exc)
    assert exc.body == {"message": f"bad key Bearer {MARKER}", "code": MARKER, "param": None}
    assert exc.code == MARKER
