"""``split-assets judge probe``: a few calls against the configured endpoint with the real
prompts of two cases, and the settings they suggest.

- **model**: the name the endpoint answers as (a local server answers any name sent).
- **prefix cache**: one case's prompt (cold: nothing cached), then another case's (warm: the
  part every prompt shares may be cached); the second call's ``cached_tokens`` and latency --
  what a judge call costs on a warm server.
- **response formats**: a short request tells the model to answer one exact, schema-breaking
  JSON object. Under ``json_schema`` a server that enforces the schema (a grammar) cannot
  comply, so a schema-valid answer means *enforced*, a schema-breaking one *accepted* (sent, not
  enforced), a 400 naming the format *refused*; ``json_object`` is *accepted* or *refused*.
- **parallelism**: short requests, each beginning with its own nonce (no server can answer
  one from another's cached prompt, and each costs the same, however slow the server): two
  one after another time one, then k at once, k doubling from 2 while the batch takes no
  longer than ``FAST`` times the slower single (twice in a row), then bisected -- the most
  requests the endpoint serves at once (up to ``--max-parallel``). A one-slot server takes
  four short calls.

The real prompts are sent twice in all, so the probe takes about three cold calls and the
parallelism test's short ones; it says so before it starts, and how long in seconds once the
first call has shown the server's pace. Everything the endpoint says goes through the client's
redactor; the key is never printed.
"""

from __future__ import annotations

import asyncio
import math
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import openai
import orjson

from split_assets.config_keys import config_key
from split_assets.errors import UserError
from split_assets.judge.call_policy import KEY_VAR, URL_VAR, check_environment
from split_assets.judge.chat_transport import client_redactor
from split_assets.judge.latency_evidence import FAST
from split_assets.judge.openai_judge import diagnosis_response_format
from split_assets.judge.schema import Diagnosis
from split_assets.settings import DiagConfig

INSTRUCTION = "Reply with exactly this JSON:"
SHORT = "[{nonce}] Reply with the word ok."  # the parallelism test's request, its own each
SHORT_TOKENS = 16
BREAKING = '{"tier": "T9", "probe": "this object breaks the diagnosis schema"}'


@dataclass
class ProbeResult:
    """What the endpoint showed (``lines`` prints it as key=value)."""

    model: str | None = None
    json_schema: str = "refused"
    json_object: str = "refused"
    prompt_tokens: int = 0
    cached_tokens: int = 0
    latency_cold_s: float = 0.0
    latency_warm_s: float = 0.0
    parallelism: int = 1
    max_parallel: int = 1
    calls: int = 0
    recommended: dict[str, Any] = field(default_factory=dict)

    def lines(self) -> list[tuple[str, object]]:
        reused = self.cached_tokens / self.prompt_tokens if self.prompt_tokens else 0.0
        return [("model", self.model or "(not reported)"), ("json_schema", self.json_schema),
                ("json_object", self.json_object),
                ("cached_tokens", "yes" if self.cached_tokens else "no"),
                ("prefix_reused", f"{reused:.2f}"),
                ("latency_cold_s", f"{self.latency_cold_s:.3f}"),
                ("latency_warm_s", f"{self.latency_warm_s:.3f}"),
                ("parallelism", self.parallelism),
                ("parallelism_probed_up_to", self.max_parallel),
                *((f"recommended_{k}", v) for k, v in self.recommended.items()),
                ("calls", self.calls)]


class Prober:
    """The probe's calls (module docstring); ``say`` gets its progress lines."""

    def __init__(self, diag: DiagConfig, cases: list[list[dict[str, str]]], max_parallel: int,
                 say: Callable[[str], None] = lambda line: None) -> None:
        check_environment()
        self.diag, self.cases, self.say = diag, cases, say
        self.max_parallel = max(1, max_parallel)
        self.client = openai.AsyncOpenAI(max_retries=0, timeout=diag.openai.timeout_max_s)
        self.redact = client_redactor(self.client)
        self.result = ProbeResult(max_parallel=self.max_parallel)

    async def call(self, messages: list[dict[str, str]], **params: Any) -> tuple[Any, float]:
        """One request: the completion and its latency (one-line errors, redacted)."""
        self.result.calls += 1
        started = time.monotonic()
        try:
            answer = await self.client.chat.completions.create(
                model=self.diag.model, messages=messages, **params)  # type: ignore[arg-type]
        except openai.AuthenticationError:
            raise UserError("the endpoint rejected the API key (401)", KEY_VAR,
                            f"set a valid key in {KEY_VAR}") from None
        except openai.APIConnectionError:
            raise UserError("cannot reach the endpoint", URL_VAR,
                            f"start the server, or set {URL_VAR} to its /v1 URL") from None
        except openai.APIStatusError as exc:
            self.redact.exception(exc)
            if exc.status_code == 400:
                raise
            raise UserError(f"the endpoint answered {exc.status_code} "
                            f"({' '.join(str(exc.message).split())[:120]})",
                            f"{config_key('model')} / {URL_VAR}", "check the model name and the URL"
                            ) from None
        return answer, time.monotonic() - started

    async def run(self) -> ProbeResult:
        self.say("judge probe: the real prompt cold and warm, two short format checks, then "
                 f"the parallelism test (short calls, up to {self.max_parallel} at once): about "
                 "3x the first call, then the test; in seconds once the first call is back")
        try:
            await self._prefix_cache()
            self.result.json_schema = await self._mode(diagnosis_response_format())
            self.result.json_object = await self._mode({"type": "json_object"})
            self.result.parallelism = await self._parallelism()
        finally:
            await self.client.close()
        self.result.recommended = self._recommend()
        return self.result

    def _params(self) -> dict[str, Any]:
        """The configured call settings, without a response format (probed on its own)."""
        s = self.diag.openai
        return {"temperature": s.temperature, "max_tokens": s.max_tokens}

    async def _prefix_cache(self) -> None:
        params = self._params()
        r = self.result
        answer, r.latency_cold_s = await self.call(self.cases[0], **params)
        r.model = self.redact.optional(answer.model)
        self.say(f"judge probe: the cold call took {_duration(r.latency_cold_s)}; about "
                 f"{_duration(2 * r.latency_cold_s)} more before the parallelism test (a "
                 "warm call and two short ones, at most as long each)")
        answer, r.latency_warm_s = await self.call(self.cases[-1], **params)
        usage = answer.usage
        details = getattr(usage, "prompt_tokens_details", None) if usage else None
        r.prompt_tokens = usage.prompt_tokens if usage else 0
        r.cached_tokens = int(getattr(details, "cached_tokens", 0) or 0)

    async def _mode(self, response_format: dict[str, Any]) -> str:
        messages = [{"role": "system", "content": "You answer with JSON."},
                    {"role": "user", "content": f"{INSTRUCTION} {BREAKING}"}]
        try:
            answer, _ = await self.call(messages, response_format=response_format,
                                        temperature=0.0, max_tokens=200)
        except openai.APIStatusError:  # a 400: this format is not supported
            return "refused"
        text = answer.choices[0].message.content or "" if answer.choices else ""
        if response_format["type"] == "json_object":
            return "accepted"
        try:
            Diagnosis.model_validate(orjson.loads(text))
        except ValueError:
            return "accepted"  # it took the format and let the model break the schema
        return "enforced"

    async def _batch(self, k: int) -> float:
        """Seconds for ``k`` short requests sent at once (the slowest), each its own prompt."""
        params = {"temperature": 0.0, "max_tokens": SHORT_TOKENS}
        latencies = await asyncio.gather(*(
            self.call([{"role": "user", "content": SHORT.format(nonce=secrets.token_hex(8))}],
                      **params) for _ in range(k)))
        return max(t for _, t in latencies)

    async def _parallelism(self) -> int:
        single = max([await self._batch(1), await self._batch(1)])
        if self.max_parallel > 1:
            self.say(f"judge probe: the parallelism test, up to {self.max_parallel} at once: "
                     f"about {_duration(2 * single)} more on a one-slot server (a short call "
                     f"takes {_duration(single)}), longer on one that serves more")
        fits, k = 1, 2
        while k <= self.max_parallel and await self._fits(k, single):
            fits, k = k, 2 * k
        low, high = fits, min(k, self.max_parallel + 1)
        while high - low > 1:
            mid = (low + high) // 2
            low, high = (mid, high) if await self._fits(mid, single) else (low, mid)
        return low

    async def _fits(self, k: int, single: float) -> bool:
        """Whether ``k`` at once come back as fast as one, twice over: a stall of the client
        or the network in one batch cannot make a queue look served at once."""
        return (await self._batch(k) <= FAST * single
                and await self._batch(k) <= FAST * single)

    def _recommend(self) -> dict[str, Any]:
        r = self.result
        unbounded = r.parallelism >= self.max_parallel
        fmt = ("json_schema" if r.json_schema == "enforced" else
               "json_object" if r.json_object == "accepted" else "text")
        return {"concurrency": self.diag.concurrency if unbounded else r.parallelism,
                "response_format": fmt,
                "timeout_s": max(60, 10 * math.ceil(3 * r.latency_cold_s / 10))}


def _duration(seconds: float) -> str:
    return f"{seconds:.1f} s" if seconds < 90 else f"{seconds / 60:.1f} min"


def probe(diag: DiagConfig, cases: list[list[dict[str, str]]], max_parallel: int,
          say: Callable[[str], None] = lambda line: None) -> ProbeResult:
    return asyncio.run(Prober(diag, cases, max_parallel, say).run())
