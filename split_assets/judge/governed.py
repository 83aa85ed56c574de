"""A governed chat-completions client over the official ``openai`` AsyncOpenAI.

One retry loop (the client's own ``max_retries=0``, so retries never stack): exponential backoff
with jitter that honours ``Retry-After``, for 429, 5xx, timeouts and connection errors; no retry
on 400/401/403/404; a circuit breaker that opens after N consecutive failed attempts; a total
timeout per call and, when streaming, time-to-first-token and inter-token timeouts; a response
cache keyed by the exact request; a telemetry row per attempt.

Everything the endpoint sends back enters through ``_call`` (and the cache through
``_from_cache``): there the answer (a streamed one once assembled), the reported model and an
API error's message and body are redacted of every credential the client is configured with
(``lib/redact.py``), before anything parses, stores, prints or raises them.
"""

from __future__ import annotations

import asyncio
import os
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any

import openai
import orjson
from openai import AsyncStream
from openai.types.chat import ChatCompletionChunk

from split_assets.config import OpenAIJudgeConfig
from split_assets.data.signals import SignalStore
from split_assets.errors import RunFailure, UserError
from split_assets.judge.base import JudgeOutcome
from split_assets.judge.budget import Budget, TimeBudget
from split_assets.judge.concurrency import START, AdaptiveLimit, Ticket
from split_assets.judge.endpoint import refused_mode, retry_after, timeout_or_reset, tls_context
from split_assets.judge.replies import Reply, Stall, read_stream, reply_of
from split_assets.lib.redact import Redactor, secrets_of

KEY_VAR = "OPENAI_API_KEY"
URL_VAR = "OPENAI_BASE_URL"


class EndpointAuthError(UserError):
    """The endpoint refused the key (401)."""


class BreakerOpen(RunFailure):
    """Too many consecutive failures: the run stops, everything finished is kept."""


class CallFailed(Exception):
    """One call could not complete (retries exhausted, or refused without retry)."""


OVERLOAD = frozenset({"timeout", "ttft_timeout", "inter_token_timeout", "429", "503"})
TIMED_OUT = frozenset({"timeout", "ttft_timeout", "inter_token_timeout"})


@dataclass(frozen=True)
class Attempt:
    """One attempt: the reply, or the status to record (and the endpoint's Retry-After);
    when it started and the concurrency limit it was sent under."""

    reply: Reply | None
    started: float
    status: str
    limit: int
    retry_after: float | None = None


@dataclass(frozen=True)
class Prepared:
    """One chat-completions request, encoded once."""

    messages: list[dict[str, str]]
    body: bytes
    key: str
    payload: dict[str, Any]  # model, messages, call settings (a streamed call adds its flags)


def client_redactor(client: openai.AsyncOpenAI) -> Redactor:
    """The redactor of every credential ``client`` sends: its API key (the Authorization
    header), admin key and webhook secret, its custom headers (``OPENAI_CUSTOM_HEADERS``) and
    the userinfo of its base URL."""
    keys = (client.api_key, getattr(client, "admin_api_key", None),
            getattr(client, "webhook_secret", None))
    headers = getattr(client, "_custom_headers", None) or {}
    return Redactor(secrets_of(keys, headers, str(client.base_url)))


def _redacted(reply: Reply, redact: Redactor) -> Reply:
    if not redact:
        return reply
    return replace(reply, text=redact(reply.text),
                   reported_model=redact.optional(reply.reported_model))


def check_environment() -> None:
    """The key must come from the environment; its value is never shown anywhere."""
    if not os.environ.get(KEY_VAR):
        raise UserError(f"{KEY_VAR} is not set", "environment",
                        f"export {KEY_VAR} (and {URL_VAR} for a non-OpenAI endpoint) before "
                        "running with diag.judge: openai")


class CircuitBreaker:
    """Opens after ``threshold`` consecutive failed attempts; a success closes the count."""

    def __init__(self, threshold: int) -> None:
        self.threshold = threshold
        self.consecutive = 0
        self.is_open = False

    def success(self) -> None:
        self.consecutive = 0

    def failure(self) -> None:
        self.consecutive += 1
        if self.consecutive >= self.threshold:
            self.is_open = True

    def check(self) -> None:
        if self.is_open:
            raise BreakerOpen(f"the endpoint failed {self.threshold} attempts in a row "
                              f"(diag.openai.breaker_threshold: {self.threshold})", URL_VAR,
                              "check the endpoint, then materialize again: finished "
                              "diagnoses are kept and not paid twice")


def _parsed(reply: Reply, parse: Callable[[str], Any] | None) -> Reply:
    if parse is None:
        return reply
    try:
        return replace(reply, parsed=parse(reply.text))
    except ValueError as exc:
        return replace(reply, error=str(exc))


def outcome_of(diagnosis: Any, reason: str | None, spent: list[Reply],
               call_failed: bool = False) -> JudgeOutcome:
    """What a diagnosis cost: calls made, cache hits, tokens spent (cache hits spend none)."""
    return JudgeOutcome(
        diagnosis=diagnosis, degraded_reason=reason, call_failed=call_failed,
        calls=sum(r.attempts for r in spent), cache_hits=sum(r.cache_hit for r in spent),
        prompt_tokens=sum(r.prompt_tokens for r in spent),
        cached_tokens=sum(r.cached_tokens for r in spent),
        completion_tokens=sum(r.completion_tokens for r in spent),
        latency_ms=sum(r.latency_ms for r in spent),
        reported_model=next((r.reported_model for r in reversed(spent) if r.reported_model),
                            None))


class GovernedClient:
    """Chat completions under the governance of ``diag.openai``."""

    def __init__(self, settings: OpenAIJudgeConfig, model: str, store: SignalStore,
                 fingerprint: str, sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
                 seed: int = 0, concurrency: int = 8, start: int = START) -> None:
        check_environment()
        self.settings = settings
        self.model = model
        self.store = store
        self.fingerprint = fingerprint
        self.breaker = CircuitBreaker(settings.breaker_threshold)
        self._sleep = sleep
        self._rng = random.Random(seed)
        longest = max(settings.timeout_s, settings.timeout_max_s if settings.adaptive else 0)
        self._client = openai.AsyncOpenAI(max_retries=0, timeout=longest,
                                          http_client=openai.DefaultAioHttpClient(
                                              timeout=longest,
                                              verify=tls_context().result()))
        self.redact = client_redactor(self._client)  # the one boundary: see _call
        self._fatal: UserError | None = None  # a 401/403/404 stops every call that follows
        # requests in flight, learned up to diag.concurrency (held per attempt, not in backoff)
        self.limit = AdaptiveLimit(concurrency, settings.adaptive, start)
        self.budget = TimeBudget(settings, self.limit, store.prompt_rates(fingerprint))

    async def aclose(self) -> None:
        await self._client.close()

    def remember(self, key: str, reply: Reply) -> None:
        """Cache a reply the caller validated (only valid responses are ever cached)."""
        if not reply.cache_hit:
            record = {"text": reply.text, "prompt_tokens": reply.prompt_tokens,
                      "completion_tokens": reply.completion_tokens,
                      "reported_model": reply.reported_model}
            self.store.cache_put(key, orjson.dumps(record).decode())

    async def complete(self, request: Prepared, question_id: str,
                       parse: Callable[[str], Any] | None = None) -> Reply:
        """One logical call: from the cache, or through the retry loop. ``parse`` turns the
        text into what the caller wants; a ValueError from it marks the reply invalid (its own
        telemetry status, ``invalid_output``; ``Reply.error`` says why)."""
        hit = self._from_cache(request, question_id, parse)
        if hit is not None:
            return hit
        s = self.settings
        for attempt in range(s.max_retries + 1):
            done = await self._attempt(request, question_id, attempt)
            if done.reply is not None:
                return await self._answered(done, question_id, attempt, parse)
            self._record(question_id, attempt, done)
            self.breaker.failure()
            if attempt == s.max_retries:
                raise CallFailed(f"{done.status} after {attempt + 1} attempts")
            backoff = min(s.backoff_max_s, s.backoff_base_s * 2 ** attempt)
            delay = done.retry_after if done.retry_after is not None else backoff * (
                0.5 + self._rng.random() / 2)
            await self._sleep(min(delay, s.backoff_max_s))
        raise AssertionError("unreachable")

    async def _attempt(self, request: Prepared, question_id: str, attempt: int) -> Attempt:
        """One attempt, under the learned concurrency (``concurrency.py``): the reply, or the
        status to record and the endpoint's Retry-After. A 401, a refusal and an open breaker
        raise. What it tells of the endpoint's parallelism goes to the limit."""
        if self._fatal is not None:
            raise self._fatal
        self.breaker.check()  # fail fast, before waiting for a place
        ticket = await self.limit.acquire()
        done = Attempt(None, time.monotonic(), "", ticket.limit)
        try:
            if self._fatal is not None:  # checked again: a 401 may come while waiting
                raise self._fatal
            self.breaker.check()
            budget = self.budget.of(ticket, len(request.body))
            async with asyncio.timeout(budget.total_s):  # no extra task
                done = replace(done, reply=await self._call(request, budget))
        except TimeoutError:
            done = replace(done, status="timeout")
        except openai.APITimeoutError as exc:
            done = replace(done, status=timeout_or_reset(exc))
        except Stall as stall:
            done = replace(done, status=stall.status)
        except openai.AuthenticationError:
            self._record(question_id, attempt, replace(done, status="401"))
            self._fatal = EndpointAuthError("the endpoint rejected the API key (401)",
                                            KEY_VAR, f"set a valid key in {KEY_VAR}")
            raise self._fatal from None
        except openai.APIStatusError as exc:
            done = replace(done, status=str(exc.status_code), retry_after=retry_after(exc))
            if exc.status_code < 500 and exc.status_code not in (408, 409, 429):
                self._record(question_id, attempt, done)
                raise self._refused(exc) from None
        except openai.APIConnectionError:
            done = replace(done, status="connection_error")
        finally:
            self._settle(ticket, done)
        return done

    def _settle(self, ticket: Ticket, done: Attempt) -> None:
        """What the attempt tells the limit: an answer and its latency, an overload (a
        timeout, 429, 503), or nothing (the place is simply given back)."""
        if done.reply is not None:
            latency = time.monotonic() - done.started
            self.budget.observe(done.reply.prompt_tokens, done.reply.cached_tokens, latency)
            self.limit.answered(ticket, latency, done.reply.cached_tokens)
        elif done.status in OVERLOAD:
            self.limit.overloaded(ticket, timed_out=done.status in TIMED_OUT)
        else:
            self.limit.release(ticket)

    def _refused(self, exc: openai.APIStatusError) -> Exception:
        """What a 4xx refusal means: 403/404 and an unsupported response format stop every
        call that follows; any other stops this question only."""
        if exc.status_code in (403, 404):
            self._fatal = UserError(f"the endpoint answered {exc.status_code} for model "
                                    f"{self.model!r}", f"diag.model / {URL_VAR}",
                                    "check the model name and the endpoint URL")
        else:
            refused = refused_mode(exc, self.settings.response_format)
            if refused is not None:  # an ordinary 400 never clears another call's stop
                self._fatal = refused
            return refused or CallFailed(f"the endpoint refused the request "
                                         f"({exc.status_code})")
        return self._fatal

    def _from_cache(self, request: Prepared, question_id: str,
                    parse: Callable[[str], Any] | None) -> Reply | None:
        """A cache hit spends nothing: no call, no tokens (the original cost is not repeated)."""
        cached = self.store.cache_get(request.key)
        if cached is None:
            return None
        record = orjson.loads(cached)  # a store of an earlier release may hold a secret
        reply = _redacted(Reply(record["text"], 0, 0, record.get("reported_model"),
                                cache_hit=True), self.redact)
        self.store.record_call(self.fingerprint, question_id, 0, "cache_hit", 0.0,
                               cache_hit=True, reported_model=reply.reported_model)
        return _parsed(reply, parse)

    async def _answered(self, done: Attempt, question_id: str, attempt: int,
                        parse: Callable[[str], Any] | None) -> Reply:
        assert done.reply is not None
        reply = done.reply
        latency = (time.monotonic() - done.started) * 1000
        # the place is free: let the question waiting for it send its request before this
        # one is parsed and stored (a place idles for none of that work)
        await asyncio.sleep(0)
        self.breaker.success()
        parsed = _parsed(replace(reply, latency_ms=latency, cache_hit=False,
                                 attempts=attempt + 1), parse)
        self.store.record_call(self.fingerprint, question_id, attempt,
                               "ok" if parsed.error is None else "invalid_output", latency,
                               reply.prompt_tokens, reply.completion_tokens, False,
                               reply.reported_model, reply.cached_tokens, done.limit)
        return parsed

    def _record(self, question_id: str, attempt: int, done: Attempt) -> None:
        self.store.record_call(self.fingerprint, question_id, attempt, done.status,
                               (time.monotonic() - done.started) * 1000,
                               concurrency=done.limit)

    def _post(self, request: Prepared, stream: bool) -> Any:
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
        return self._client.post("/chat/completions", content=body, cast_to=dict,
                                 options={"headers": {"Content-Type": "application/json"}},
                                 stream=stream, stream_cls=AsyncStream[ChatCompletionChunk])

    async def _call(self, request: Prepared, budget: Budget) -> Reply:
        """Where the endpoint's text enters: the answer (a streamed one once assembled, so a
        secret split across chunks is found whole), the reported model and an API error (a
        4xx/5xx body, an error event of a stream) are redacted here."""
        try:
            if not self.settings.stream:
                reply = reply_of(await self._post(request, stream=False))
            else:
                reply = await self._stream(request, budget)
        except openai.APIError as exc:
            self.redact.exception(exc)  # in place: the same error, its texts redacted
            raise
        return _redacted(reply, self.redact)

    async def _stream(self, request: Prepared, budget: Budget) -> Reply:
        started = time.monotonic()
        try:
            async with asyncio.timeout(budget.first_token_s):
                stream = await self._post(request, stream=True)
        except TimeoutError:
            raise Stall("ttft_timeout") from None
        return await read_stream(stream, started, budget.first_token_s,
                                 self.settings.inter_token_timeout_s)
