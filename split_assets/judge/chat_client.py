"""A governed chat-completions client over the official ``openai`` AsyncOpenAI.

One retry loop (the client's own ``max_retries=0``, so retries never stack): exponential backoff
with jitter that honours ``Retry-After``, for 429, 5xx, timeouts and connection errors; no retry
on 400/401/403/404; a circuit breaker that opens after N consecutive failed attempts; a total
timeout per call and, when streaming, time-to-first-token and inter-token timeouts; a response
cache keyed by the exact request; a telemetry row per attempt.

The endpoint's side of a call (the ``openai`` client, redaction of what it answers) is
``chat_transport.py``; the rules of a call (breaker, errors, statuses) are ``call_policy.py``.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

import openai

from split_assets.config_keys import config_key
from split_assets.errors import UserError
from split_assets.judge.budget import TimeBudget
from split_assets.judge.call_policy import (
    KEY_VAR,
    OVERLOAD,
    TIMED_OUT,
    URL_VAR,
    Attempt,
    CallFailed,
    CircuitBreaker,
    EndpointAuthError,
    Prepared,
    check_environment,
    connection_failure,
    outcome_of,
    parsed_reply,
    safe_url,
)
from split_assets.judge.chat_transport import ChatTransport
from split_assets.judge.concurrency import START, AdaptiveLimit, Ticket
from split_assets.judge.endpoint import refused_mode, retry_after, timeout_or_reset, tls_context
from split_assets.judge.replies import Reply, Stall
from split_assets.judge.reply_cache import ReplyCache
from split_assets.settings import OpenAIJudgeConfig
from split_assets.store.signals import SignalStore

# what the openai judge imports from here
__all__ = ["CallFailed", "ChatClient", "Prepared", "Reply", "outcome_of", "tls_context"]


class ChatClient:
    """Chat completions under the governance of ``diag.openai``."""

    def __init__(self, settings: OpenAIJudgeConfig, model: str, store: SignalStore,
                 fingerprint: str, sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
                 seed: int = 0, concurrency: int = 8, start: int | None = None) -> None:
        check_environment()
        self.settings = settings
        self.model = model
        self.store = store
        self.fingerprint = fingerprint
        self.breaker = CircuitBreaker(settings.breaker_threshold)
        self._sleep = sleep
        self._rng = random.Random(seed)
        self.transport = ChatTransport(settings)
        self.redact = self.transport.redact  # the one boundary: see ChatTransport.call
        self.cache = ReplyCache(store, fingerprint, self.redact)
        self._fatal: UserError | None = None  # a 401/403/404 stops every call that follows
        self._last_failure: str | None = None  # the last connection failure, named
        # requests in flight, learned up to diag.concurrency (held per attempt, not in backoff),
        # from diag.concurrency when given, else where this judge's last run ended, else START
        if start is None:
            start = store.learned_concurrency(fingerprint) or START
        self.limit = AdaptiveLimit(concurrency, settings.adaptive, start)
        self.budget = TimeBudget(settings, self.limit, store.prompt_rates(fingerprint))

    async def aclose(self) -> None:
        await self.transport.aclose()

    def remember(self, key: str, reply: Reply) -> None:
        """Cache a reply the caller validated (only valid responses are ever cached)."""
        self.cache.put(key, reply)

    async def complete(self, request: Prepared, question_id: str,
                       parse: Callable[[str], Any] | None = None) -> Reply:
        """One logical call: from the cache, or through the retry loop. ``parse`` turns the
        text into what the caller wants; a ValueError from it marks the reply invalid (its own
        telemetry status, ``invalid_output``; ``Reply.error`` says why)."""
        hit = self.cache.get(request.key, question_id, parse)
        if hit is not None:
            return hit
        s = self.settings
        for attempt in range(s.max_retries + 1):
            done = await self._attempt(request, question_id, attempt)
            if done.reply is not None:
                return await self._answered(done, question_id, attempt, parse)
            self._record(question_id, attempt, done)
            self.breaker.failure(self._last_failure if done.status in (
                "connection_error", "timeout") else f"HTTP {done.status}"
                if done.status.isdigit() else done.status)
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
                done = replace(done, reply=await self.transport.call(request, budget))
        except TimeoutError:
            done = replace(done, status="timeout")
        except openai.APITimeoutError as exc:  # aiohttp's form of a refused connection too
            done = replace(done, status=timeout_or_reset(exc))
            self._last_failure = (connection_failure(exc, self.transport.base_url)
                                  if done.status == "connection_error" else
                                  f"timed out ({safe_url(self.transport.base_url)})")
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
        except openai.APIConnectionError as exc:
            done = replace(done, status="connection_error")
            self._last_failure = connection_failure(exc, self.transport.base_url)
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
                                    f"{self.model!r}", f"{config_key('model')} / {URL_VAR}",
                                    "check the model name and the endpoint URL")
        else:
            refused = refused_mode(exc, self.settings.response_format)
            if refused is not None:  # an ordinary 400 never clears another call's stop
                self._fatal = refused
            return refused or CallFailed(f"the endpoint refused the request "
                                         f"({exc.status_code})")
        return self._fatal

    async def _answered(self, done: Attempt, question_id: str, attempt: int,
                        parse: Callable[[str], Any] | None) -> Reply:
        assert done.reply is not None
        reply = done.reply
        latency = (time.monotonic() - done.started) * 1000
        # the place is free: let the question waiting for it send its request before this
        # one is parsed and stored (a place idles for none of that work)
        await asyncio.sleep(0)
        self.breaker.success()
        parsed = parsed_reply(replace(reply, latency_ms=latency, cache_hit=False,
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
