"""The rules every chat call is governed by: where the key and URL come from, the errors a
call ends in, which statuses mean an overloaded endpoint, the circuit breaker, what one request
and one attempt are, and what a diagnosis cost (``outcome_of``)."""

from __future__ import annotations

import os
import socket
import ssl
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlsplit, urlunsplit

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
    """The key must come from the environment; its value is never shown anywhere. A base URL
    with credentials in it (``https://user:pass@host``) is refused: the HTTP layer cannot send
    them beside the key, and would fail each call with a traceback."""
    if not os.environ.get(KEY_VAR):
        raise UserError(f"{KEY_VAR} is not set", "environment",
                        f"export {KEY_VAR} (and {URL_VAR} for a non-OpenAI endpoint) before "
                        f"running with {config_key('judge')}: openai")
    url = os.environ.get(URL_VAR, "")
    if "@" in urlsplit(url).netloc:
        raise UserError(f"{URL_VAR} holds credentials ({safe_url(url)} with a user or "
                        "password before '@')", URL_VAR,
                        f"drop them from the URL: the key goes in {KEY_VAR}, other headers "
                        "in OPENAI_CUSTOM_HEADERS")


class CircuitBreaker:
    """Opens after ``threshold`` consecutive failed attempts; a success closes the count."""

    def __init__(self, threshold: int) -> None:
        self.threshold = threshold
        self.consecutive = 0
        self.is_open = False
        self.last: str | None = None  # the last failure, named: "connection refused (URL)"

    def success(self) -> None:
        self.consecutive = 0
        self.last = None

    def failure(self, last: str | None = None) -> None:
        self.consecutive += 1
        self.last = last or self.last
        if self.consecutive >= self.threshold:
            self.is_open = True

    def check(self) -> None:
        if self.is_open:
            last = f"; the last: {self.last}" if self.last else ""
            raise BreakerOpen(f"the endpoint failed {self.threshold} attempts in a row "
                              f"({config_key('breaker_threshold')}: {self.threshold}){last}",
                              URL_VAR, "check the endpoint, then materialize again: finished "
                                       "diagnoses are kept and not paid twice")


# a connection failure's cause, by the exception types (and messages) of its chain
_CAUSES: tuple[tuple[tuple[type[BaseException], ...], tuple[str, ...], str], ...] = (
    ((ConnectionRefusedError,), ("connection refused",), "connection refused"),
    ((socket.gaierror,), ("name or service not known", "nodename nor servname",
                          "temporary failure in name resolution", "getaddrinfo"),
     "name not resolved"),
    ((ssl.SSLError,), ("ssl", "certificate"), "TLS failed"),
    ((TimeoutError,), ("timed out", "timeout"), "connection timed out"),
    ((ConnectionResetError,), ("reset by peer", "connection reset"), "connection reset"),
)


def connection_failure(exc: BaseException, url: str) -> str:
    """What a failed connection was, named for the user: its cause (refused, name not
    resolved, TLS, timed out, reset) and the endpoint's URL without credentials."""
    chain, seen = [], set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        chain.append(link)
        link = link.__cause__ or link.__context__
    text = " ".join(str(e) for e in chain).lower()
    cause = next((name for types, words, name in _CAUSES
                  if any(isinstance(e, types) for e in chain)
                  or any(w in text for w in words)), "connection failed")
    return f"{cause} ({safe_url(url)})"


def safe_url(url: str) -> str:
    """``url`` without its userinfo, query and fragment."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    if parts.port is not None:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))


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
