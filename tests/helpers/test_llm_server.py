"""Self-test of the fake OpenAI server (``llm_server.py``) using the real ``openai`` client."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest

from testkit.llm_server import (
    INVALID_JSON_CONTENT,
    Action,
    FakeLLM,
    default_diagnosis,
    escape_echo,
)

MESSAGES = [
    {"role": "system", "content": "You diagnose failures of a video-QA pipeline."},
    {"role": "user", "content": "Question 17: the model counted 3 apples, truth is 5. Why?"},
]


@pytest.fixture
def server() -> Iterator[FakeLLM]:
    with FakeLLM() as srv:
        yield srv


def _client(srv: FakeLLM, **kwargs: object) -> openai.AsyncOpenAI:
    kwargs.setdefault("api_key", "k")
    kwargs.setdefault("timeout", 5.0)
    return openai.AsyncOpenAI(base_url=srv.base_url, max_retries=0, **kwargs)  # type: ignore[arg-type]


async def _call(client: openai.AsyncOpenAI, **kwargs: object):
    return await client.chat.completions.create(model="gpt-x", messages=MESSAGES, **kwargs)


def test_non_stream_is_valid_and_deterministic(server: FakeLLM) -> None:
    async def run():
        async with _client(server) as client:
            return await _call(client), await _call(client)

    first, second = asyncio.run(run())
    content = first.choices[0].message.content
    diagnosis = json.loads(content)
    assert diagnosis == default_diagnosis({"messages": MESSAGES})
    assert diagnosis["tier"] in ("T1", "T2")
    assert (diagnosis["evolution_target"] is None) == (diagnosis["tier"] == "T1")
    assert first.model == "fake-model-1"
    assert first.choices[0].finish_reason == "stop"
    assert first.usage is not None and first.usage.prompt_tokens > 0
    assert first.usage.total_tokens == first.usage.prompt_tokens + first.usage.completion_tokens
    assert second.choices[0].message.content == content
    assert server.statuses == [200, 200]
    assert len(server.requests) == 2 and server.requests[0]["messages"] == MESSAGES


def test_tier_depends_on_last_user_message() -> None:
    tiers = {
        default_diagnosis({"messages": [{"role": "user", "content": f"case {i}"}]})["tier"]
        for i in range(20)
    }
    assert tiers == {"T1", "T2"}


def test_stream_matches_non_stream_and_reports_usage(server: FakeLLM) -> None:
    async def run():
        async with _client(server) as client:
            plain = await _call(client)
            stream = await _call(client, stream=True, stream_options={"include_usage": True})
            pieces, usage, finish = [], None, None
            async for chunk in stream:
                if chunk.choices:
                    pieces.append(chunk.choices[0].delta.content or "")
                    finish = chunk.choices[0].finish_reason or finish
                if chunk.usage is not None:
                    usage = chunk.usage
            return plain, pieces, usage, finish

    plain, pieces, usage, finish = asyncio.run(run())
    assert "".join(pieces) == plain.choices[0].message.content
    assert len([p for p in pieces if p]) >= 3
    assert finish == "stop"
    assert usage is not None and usage.total_tokens == plain.usage.total_tokens


def test_rate_limit_with_retry_after_then_success(server: FakeLLM) -> None:
    server.script(Action("status", status=429, retry_after=1.5))

    async def run():
        async with _client(server) as client:
            with pytest.raises(openai.RateLimitError) as info:
                await _call(client)
            return info.value, await _call(client)

    error, ok = asyncio.run(run())
    assert error.response.headers["retry-after"] == "1.5"
    assert error.code == "rate_limit_exceeded"
    assert json.loads(ok.choices[0].message.content)["tier"] in ("T1", "T2")
    assert server.statuses == [429, 200]


def test_server_error_reset_and_bad_key(server: FakeLLM) -> None:
    server.script(Action("status", status=500), Action("reset"))

    async def run():
        async with _client(server) as client:
            with pytest.raises(openai.InternalServerError):
                await _call(client)
            with pytest.raises(openai.APIConnectionError) as info:
                await _call(client)
            assert not isinstance(info.value, openai.APITimeoutError)
            await _call(client)  # the client recovers on a fresh connection
        async with _client(server, api_key="bad-key") as client:
            with pytest.raises(openai.AuthenticationError) as auth:
                await _call(client)
            assert auth.value.code == "invalid_api_key"

    asyncio.run(run())
    assert server.statuses == [500, 0, 200, 401]


def test_stall_first_times_out(server: FakeLLM) -> None:
    server.script(Action("stall_first", stall_s=2.0))

    async def run():
        async with _client(server, timeout=0.5) as client:
            start = time.monotonic()
            with pytest.raises(openai.APITimeoutError):
                await _call(client)
            return time.monotonic() - start

    assert asyncio.run(run()) < 1.5


def test_stall_mid_stream_times_out(server: FakeLLM) -> None:
    server.script(Action("stall_mid", stall_s=2.0))

    async def run():
        pieces = []
        async with _client(server, timeout=0.5) as client:
            with pytest.raises(openai.APITimeoutError):
                stream = await _call(client, stream=True)
                async for chunk in stream:
                    pieces.append(chunk.choices[0].delta.content)
        return pieces

    assert len(asyncio.run(run())) == 2


def test_content_kinds_responder_and_model(server: FakeLLM) -> None:
    server.script(Action("invalid_json"), Action("schema_invalid"), Action("text", content="hi"))
    server.responder = lambda body, index: Action("ok", content=f"#{index}")

    async def run():
        async with _client(server) as client:
            return [(await _call(client)).choices[0].message.content for _ in range(4)]

    bad, schema, text, by_responder = asyncio.run(run())
    assert bad == INVALID_JSON_CONTENT
    with pytest.raises(json.JSONDecodeError):
        json.loads(bad)
    assert json.loads(schema)["tier"] == "T9"
    assert text == "hi"
    assert by_responder == "#3"

    server.model_reported = "other-model"

    async def model_names():
        async with _client(server) as client:
            listed = [m.id async for m in client.models.list()]
            return listed, (await _call(client)).model

    assert asyncio.run(model_names()) == (["other-model"], "other-model")


def test_concurrent_calls_overlap() -> None:
    with FakeLLM(latency_s=0.2) as srv:

        async def run():
            async with _client(srv) as client:
                start = time.monotonic()
                results = await asyncio.gather(*(_call(client) for _ in range(64)))
                return time.monotonic() - start, results

        elapsed, results = asyncio.run(run())
    assert len(results) == 64 and len(srv.requests) == 64
    assert elapsed < 1.5, elapsed


def test_echo_puts_the_header_into_answers_errors_and_split_chunks(server: FakeLLM) -> None:
    key = 'sk-e/c"h&o<>0123456789'
    auth = f"Bearer {key}"

    async def run():
        async with _client(server, api_key=key) as client:
            raw = {}
            for style in ("plain", "json", "unicode"):
                server.script(Action(echo=style))
                response = await client.chat.completions.with_raw_response.create(
                    model="gpt-x", messages=MESSAGES)
                raw[style] = (response.http_response.text, response.parse())
            server.script(Action(echo="plain"))
            stream = await _call(client, stream=True)
            pieces = [c.choices[0].delta.content async for c in stream
                      if c.choices and c.choices[0].delta.content]
            server.script(Action("status", status=503, echo="json"))
            with pytest.raises(openai.InternalServerError) as refused:
                await _call(client)
            server.script(Action("stream_error", echo="plain"))
            with pytest.raises(openai.APIError) as event:
                async for _ in await _call(client, stream=True):
                    pass
            return raw, pieces, refused.value, event.value

    raw, pieces, refused, event = asyncio.run(run())
    for style, (text, reply) in raw.items():
        rationale = json.loads(reply.choices[0].message.content)["rationale"]
        assert rationale.endswith(f"(the request's authorization: {auth})")
        assert reply.model == f"fake-model-1 ({auth})"
        assert escape_echo(auth, style) in text  # the reported model, as the wire has it
    assert escape_echo(key, "json") == r'sk-e\/c\"h\u0026o\u003c\u003e0123456789'
    assert escape_echo("sk", "unicode") == r"\u0073\u006b"
    # streamed: the value is cut across chunks, whole once they are joined
    assert json.loads("".join(pieces))["rationale"].endswith(f"authorization: {auth})")
    wire = escape_echo(key, "plain")
    assert wire in "".join(pieces) and not any(wire[3:-3] in piece for piece in pieces)
    assert auth in refused.message and auth in event.message


def test_main_mode_serves_until_terminated() -> None:
    script = Path(__file__).parents[2] / "testkit" / "llm_server.py"
    proc = subprocess.Popen(
        [sys.executable, str(script), "--port", "0", "--latency", "0.2"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        assert line.startswith("READY http://127.0.0.1:"), line
        base_url = line.split(" ", 1)[1]
        with openai.OpenAI(base_url=base_url, api_key="k", max_retries=0, timeout=5) as client:
            reply = client.chat.completions.create(model="gpt-x", messages=MESSAGES)
        assert json.loads(reply.choices[0].message.content)["tier"] in ("T1", "T2")
        proc.terminate()
        out, _ = proc.communicate(timeout=5)
        assert proc.returncode == 0
        assert "REQUESTS 1" in out
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_slot_mode_queues_beyond_the_slots_keeps_an_abandoned_request_and_caches_per_slot(
        ) -> None:
    """Two slots: four requests at once are served two by two; a request whose client gave up
    keeps its slot until done, so the next one waits; a slot reports the prompt it cached."""
    from testkit.slots import SlotModel

    slots = SlotModel(2, 0.3)
    with FakeLLM(slots=slots) as srv:

        async def run() -> tuple[list[int], bool]:
            async with _client(srv) as client:
                replies = await asyncio.gather(*(_call(client) for _ in range(4)))
                cached = [r.usage.prompt_tokens_details.cached_tokens for r in replies]
            async with _client(srv, timeout=0.1) as impatient:  # gives up on both slots
                gave_up = await asyncio.gather(_call(impatient), _call(impatient),
                                               return_exceptions=True)
            async with _client(srv) as client:
                await _call(client)  # waits for a slot the abandoned requests still hold
            return cached, all(isinstance(e, openai.APITimeoutError) for e in gave_up)

        cached, abandoned = asyncio.run(run())
    assert slots.max_active == 2 and slots.served == 7 and abandoned
    assert slots.max_waiting >= 2  # the third and fourth of the first four, and the last
    assert sorted(cached)[:2] == [0, 0] and min(sorted(cached)[2:]) > 0  # cold, then warm


def test_schema_modes_follow_or_refuse_an_instruction() -> None:
    instructed = [{"role": "user", "content": 'Reply with exactly this JSON: {"tier": "T9"}'}]
    schema = {"type": "json_schema", "json_schema": {"name": "d", "schema": {}}}

    async def ask(srv: FakeLLM, **kwargs: object) -> str:
        async with _client(srv) as client:
            reply = await client.chat.completions.create(model="m", messages=instructed,
                                                         **kwargs)
            return reply.choices[0].message.content

    with FakeLLM(schema_mode="enforce") as srv:
        assert json.loads(asyncio.run(ask(srv, response_format=schema)))["tier"] in ("T1", "T2")
        assert asyncio.run(ask(srv)) == '{"tier": "T9"}'  # unconstrained: it does as told
    with FakeLLM(schema_mode="ignore") as srv:
        assert asyncio.run(ask(srv, response_format=schema)) == '{"tier": "T9"}'
    with FakeLLM(schema_mode="refuse") as srv, pytest.raises(openai.BadRequestError):
        asyncio.run(ask(srv, response_format=schema))
