"""A governed chat-completions client over the official ``openai`` AsyncOpenAI.

One retry loop (the client's own ``max_retries=0``, so retries never stack): exponential backoff
with jitter that honours ``Retry-After``, for 429, 5xx, timeouts and connection errors; no retry
on 400/401/403/404; a circuit breaker that opens after N consecutive failed attempts; a total
timeout per call and, when streaming, time-to-first-token and inter-token timeouts; a response
cache keyed by the exact request; a telemetry row per attempt.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from email.utils import parsedate_to_datetime
from typing import Any

import openai

from split_assets.config import OpenAIJudgeConfig
from split_assets.data.signals import SignalStore
from split_assets.errors import RunFailure, UserError
from split_assets.lib.canonical import canonical_json, sha256_hex

KEY_VAR = "OPENAI_API_KEY"
URL_VAR = "OPENAI_BASE_URL"


class EndpointAuthError(UserError):
    """The endpoint refused the key (401)."""


class BreakerOpen(RunFailure):
    """Too many consecutive failures: the run stops, everything finished is kept."""


class CallFailed(Exception):
    """One call could not complete (retries exhausted, or refused without retry)."""


class _Stall(Exception):
    def __init__(self, status: str) -> None:
        super().__init__(status)
        self.status = status


@dataclass(frozen=True)
class Reply:
    """What the endpoint answered (or the cache remembered)."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    reported_model: str | None = None
    latency_ms: float = 0.0
    cache_hit: bool = False
    attempts: int = 0


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
            raise BreakerOpen(f"the endpoint failed {self.consecutive} times in a row",
                              URL_VAR, "check the endpoint, then materialize again: finished "
                                       "diagnoses are kept and not paid twice")


def _retry_after(exc: Exception) -> float | None:
    response = getattr(exc, "response", None)
    value = response.headers.get("retry-after") if response is not None else None
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        try:
            return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
        except (TypeError, ValueError):
            return None


class GovernedClient:
    """Chat completions under the governance of ``diag.openai``."""

    def __init__(self, settings: OpenAIJudgeConfig, model: str, store: SignalStore,
                 fingerprint: str, sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
                 seed: int = 0) -> None:
        check_environment()
        self.settings = settings
        self.model = model
        self.store = store
        self.fingerprint = fingerprint
        self.breaker = CircuitBreaker(settings.breaker_threshold)
        self._sleep = sleep
        self._rng = random.Random(seed)
        self._client = openai.AsyncOpenAI(max_retries=0, timeout=settings.timeout_s)
        self._fatal: UserError | None = None  # a 401/403/404 stops every call that follows

    async def aclose(self) -> None:
        await self._client.close()

    def params(self) -> dict[str, Any]:
        params: dict[str, Any] = {"temperature": self.settings.temperature,
                                  "max_tokens": self.settings.max_tokens}
        if self.settings.json_mode:
            params["response_format"] = {"type": "json_object"}
        return params

    def request_key(self, messages: list[dict[str, str]]) -> str:
        return sha256_hex(canonical_json({"model": self.model, "messages": messages,
                                          "params": self.params()}))

    def remember(self, messages: list[dict[str, str]], reply: Reply) -> None:
        """Cache a reply the caller validated (only valid responses are ever cached)."""
        if not reply.cache_hit:
            record = asdict(reply)
            for transient in ("latency_ms", "cache_hit", "attempts"):
                record.pop(transient)
            self.store.cache_put(self.request_key(messages), json.dumps(record))

    async def complete(self, messages: list[dict[str, str]], question_id: str) -> Reply:
        """One logical call: from the cache, or through the retry loop."""
        cached = self.store.cache_get(self.request_key(messages))
        if cached is not None:
            reply = Reply(**json.loads(cached), cache_hit=True)
            self.store.record_call(self.fingerprint, question_id, 0, "cache_hit", 0.0,
                                   cache_hit=True, reported_model=reply.reported_model)
            return reply
        s = self.settings
        for attempt in range(s.max_retries + 1):
            if self._fatal is not None:
                raise self._fatal
            self.breaker.check()
            started = time.monotonic()
            retry_after: float | None = None
            try:
                reply = await asyncio.wait_for(self._call(messages), timeout=s.timeout_s)
            except EndpointAuthError:
                raise
            except (TimeoutError, openai.APITimeoutError):
                status = "timeout"
            except _Stall as stall:
                status = stall.status
            except openai.AuthenticationError:
                self._record(question_id, attempt, "401", started)
                self._fatal = EndpointAuthError("the endpoint rejected the API key (401)",
                                                KEY_VAR, f"set a valid key in {KEY_VAR}")
                raise self._fatal from None
            except (openai.PermissionDeniedError, openai.NotFoundError) as exc:
                self._record(question_id, attempt, str(exc.status_code), started)
                self._fatal = UserError(f"the endpoint answered {exc.status_code} for model "
                                        f"{self.model!r}", f"diag.model / {URL_VAR}",
                                        "check the model name and the endpoint URL")
                raise self._fatal from None
            except openai.APIStatusError as exc:
                status = str(exc.status_code)
                if exc.status_code < 500 and exc.status_code not in (408, 409, 429):
                    self._record(question_id, attempt, status, started)
                    raise CallFailed(f"the endpoint refused the request ({status})") from None
                retry_after = _retry_after(exc)
            except openai.APIConnectionError:
                status = "connection_error"
            else:
                self.breaker.success()
                latency = (time.monotonic() - started) * 1000
                self.store.record_call(self.fingerprint, question_id, attempt, "ok", latency,
                                       reply.prompt_tokens, reply.completion_tokens, False,
                                       reply.reported_model)
                return Reply(reply.text, reply.prompt_tokens, reply.completion_tokens,
                             reply.reported_model, latency, False, attempt + 1)
            self._record(question_id, attempt, status, started)
            self.breaker.failure()
            if attempt == s.max_retries:
                raise CallFailed(f"{status} after {attempt + 1} attempts")
            backoff = min(s.backoff_max_s, s.backoff_base_s * 2 ** attempt)
            delay = retry_after if retry_after is not None else backoff * (
                0.5 + self._rng.random() / 2)
            await self._sleep(min(delay, s.backoff_max_s))
        raise AssertionError("unreachable")

    def _record(self, question_id: str, attempt: int, status: str, started: float) -> None:
        self.store.record_call(self.fingerprint, question_id, attempt, status,
                               (time.monotonic() - started) * 1000)

    async def _call(self, messages: list[dict[str, str]]) -> Reply:
        if not self.settings.stream:
            resp = await self._client.chat.completions.create(
                model=self.model, messages=messages, **self.params())
            usage = resp.usage
            return Reply(resp.choices[0].message.content or "",
                         usage.prompt_tokens if usage else 0,
                         usage.completion_tokens if usage else 0, resp.model)
        return await self._stream(messages)

    async def _stream(self, messages: list[dict[str, str]]) -> Reply:
        s = self.settings
        started = time.monotonic()
        try:
            stream = await asyncio.wait_for(self._client.chat.completions.create(
                model=self.model, messages=messages, stream=True,
                stream_options={"include_usage": True}, **self.params()),
                timeout=s.ttft_timeout_s)
        except TimeoutError:
            raise _Stall("ttft_timeout") from None
        pieces: list[str] = []
        usage, model, first = None, None, True
        iterator = stream.__aiter__()
        try:
            while True:
                wait = (max(0.0, s.ttft_timeout_s - (time.monotonic() - started)) if first
                        else s.inter_token_timeout_s)
                try:
                    chunk = await asyncio.wait_for(iterator.__anext__(), timeout=wait)
                except StopAsyncIteration:
                    break
                except TimeoutError:
                    raise _Stall("ttft_timeout" if first else "inter_token_timeout") from None
                first = False
                model = chunk.model or model
                if chunk.usage is not None:
                    usage = chunk.usage
                for choice in chunk.choices:
                    if choice.delta and choice.delta.content:
                        pieces.append(choice.delta.content)
        finally:
            await stream.close()
        return Reply("".join(pieces), usage.prompt_tokens if usage else 0,
                     usage.completion_tokens if usage else 0, model)
