"""The rules every chat call is governed by: where the key and URL come from, the errors a
call ends in, which statuses mean an overloaded endpoint, the circuit breaker, what one request
and one attempt are, and what a diagnosis cost (``outcome_of``)."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from split_assets.config_keys import config_key
from split_assets.errors import RunFailure, UserError
from split_assets.judge.base import JudgeOutcome
from split_assets.judge.replies import Reply

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


def check_environment() -> None:
    """The key must come from the environment; its value is never shown anywhere."""
    if not os.environ.get(KEY_VAR):
        raise UserError(f"{KEY_VAR} is not set", "environment",
                        f"export {KEY_VAR} (and {URL_VAR} for a non-OpenAI endpoint) before "
                        f"running with {config_key('judge')}: openai")


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
                              f"({config_key('breaker_threshold')}: {self.threshold})", URL_VAR,
                              "check the endpoint, then materialize again: finished "
                              "diagnoses are kept and not paid twice")


def parsed_reply(reply: Reply, parse: Callable[[str], Any] | None) -> Reply:
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
