"""The endpoint's side of a chat call: the ``openai`` AsyncOpenAI client (its own retries off,
``chat_client.py`` governs them), the POST of an encoded request, a streamed answer assembled.

Everything the endpoint sends back enters through ``ChatTransport.call`` (and the cache
through ``ChatClient``'s lookup, with ``redacted``): there the answer (a streamed one once
assembled), the reported model and an API error's message and body are redacted of every
credential the client is configured with (``lib/redact.py``), before anything parses, stores,
prints or raises them."""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from typing import Any

import openai
import orjson
from openai import AsyncStream
from openai.types.chat import ChatCompletionChunk

from split_assets.judge.budget import Budget
from split_assets.judge.call_policy import Prepared
from split_assets.judge.endpoint import tls_context
from split_assets.judge.replies import Reply, Stall, read_stream, reply_of
from split_assets.lib.redact import LogRedaction, Redactor, secrets_of
from split_assets.settings import OpenAIJudgeConfig


def client_redactor(client: openai.AsyncOpenAI) -> Redactor:
    """The redactor of every credential ``client`` sends: its API key (the Authorization
    header), admin key and webhook secret, its custom headers (``OPENAI_CUSTOM_HEADERS``) and
    the userinfo of its base URL."""
    keys = (client.api_key, getattr(client, "admin_api_key", None),
            getattr(client, "webhook_secret", None))
    headers = getattr(client, "_custom_headers", None) or {}
    return Redactor(secrets_of(keys, headers, str(client.base_url)))


def redacted(reply: Reply, redact: Redactor) -> Reply:
    if not redact:
        return reply
    return replace(reply, text=redact(reply.text),
                   reported_model=redact.optional(reply.reported_model))


class ChatTransport:
    """One AsyncOpenAI client (``max_retries=0``: retries never stack) and its redactor."""

    def __init__(self, settings: OpenAIJudgeConfig) -> None:
        self.settings = settings
        longest = max(settings.timeout_s, settings.timeout_max_s if settings.adaptive else 0)
        self._client = openai.AsyncOpenAI(max_retries=0, timeout=longest,
                                          http_client=openai.DefaultAioHttpClient(
                                              timeout=longest,
                                              verify=tls_context().result()))
        self.redact = client_redactor(self._client)  # the one boundary: see call
        # and the client's own debug log (OPENAI_LOG=debug), while this client lives
        self._log_redaction = LogRedaction(self.redact).install() if self.redact else None

    @property
    def base_url(self) -> str:
        return str(self._client.base_url)

    async def aclose(self) -> None:
        if self._log_redaction is not None:
            self._log_redaction.remove()
        await self._client.close()

    def post(self, request: Prepared, stream: bool, timeout_s: float) -> Any:
        """POST /chat/completions through the client's own request path (base URL, key, headers,
        error types, streaming). The body goes in as the bytes hashed for the cache key:
        ``chat.completions.create`` would first walk every message through the client's
        type-driven transform and encode it again, ~4 ms of CPU per call on a 28 kB prompt that
        change nothing for plain string messages."""
        body = request.body
        if stream:
            body = orjson.dumps({**request.payload, "stream": True,
                                 "stream_options": {"include_usage": True}},
                                option=orjson.OPT_SORT_KEYS)
        # A non-streamed answer is read as plain JSON (cast_to=dict): three fields are needed,
        # and building the typed ChatCompletion model costs more CPU than the rest of the call.
        # the HTTP layer's own timeout outlasts the attempt's budget (its wait behind this
        # run's requests ahead may exceed timeout_max_s): the budget ends the attempt
        return self._client.post("/chat/completions", content=body, cast_to=dict,
                                 options={"headers": {"Content-Type": "application/json"},
                                          "timeout": timeout_s + 1.0},
                                 stream=stream, stream_cls=AsyncStream[ChatCompletionChunk])

    async def call(self, request: Prepared, budget: Budget) -> Reply:
        """Where the endpoint's text enters: the answer (a streamed one once assembled, so a
        secret split across chunks is found whole), the reported model and an API error (a
        4xx/5xx body, an error event of a stream) are redacted here."""
        try:
            if not self.settings.stream:
                reply = reply_of(await self.post(request, False, budget.total_s))
            else:
                reply = await self._stream(request, budget)
        except openai.APIError as exc:
            self.redact.exception(exc)  # in place: the same error, its texts redacted
            raise
        return redacted(reply, self.redact)

    async def _stream(self, request: Prepared, budget: Budget) -> Reply:
        started = time.monotonic()
        try:
            async with asyncio.timeout(budget.first_token_s):
                stream = await self.post(request, True, budget.total_s)
        except TimeoutError:
            raise Stall("ttft_timeout") from None
        return await read_stream(stream, started, budget.first_token_s,
                                 self.settings.inter_token_timeout_s)
