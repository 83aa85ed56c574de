"""What an OpenAI-compatible endpoint answers, as the chat client reads it: a ``Reply``
(text, usage, reported model), from a plain completion (``reply_of``) or a stream assembled
under its first-token and inter-token time budgets (``read_stream``; ``Stall`` when one
passes)."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any


class Stall(Exception):
    """A stream stopped: no first token, or no next one, in time."""

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
    cached_tokens: int = 0  # prompt tokens the provider served from its prefix cache
    parsed: Any = None  # what the caller's parser made of the text
    error: str | None = None  # why the caller's parser refused the text (invalid output)



def reply_of(data: Any) -> Reply:
    """The text, usage and model of a chat completion (an empty text when it has none, which
    the judge then treats as invalid output)."""
    if not isinstance(data, dict):
        return Reply("")
    choices = data.get("choices") or [{}]
    message = choices[0].get("message") if isinstance(choices[0], dict) else None
    text = message.get("content") if isinstance(message, dict) else None
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    details = usage.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    model = data.get("model")
    return Reply(text if isinstance(text, str) else "", int(usage.get("prompt_tokens") or 0),
                 int(usage.get("completion_tokens") or 0),
                 model if isinstance(model, str) else None,
                 cached_tokens=int(cached) if isinstance(cached, int) else 0)


async def read_stream(stream: Any, started: float, ttft_s: float, inter_token_s: float
                      ) -> Reply:
    """A streamed answer assembled, under the time-to-first-token (from ``started``) and
    inter-token timeouts (``Stall`` when one passes); the stream is closed either way."""
    pieces: list[str] = []
    usage, model, first = None, None, True
    iterator = stream.__aiter__()
    try:
        while True:
            wait = (max(0.0, ttft_s - (time.monotonic() - started)) if first
                    else inter_token_s)
            try:
                async with asyncio.timeout(wait):
                    chunk = await iterator.__anext__()
            except StopAsyncIteration:
                break
            except TimeoutError:
                raise Stall("ttft_timeout" if first else "inter_token_timeout") from None
            first = False
            model = chunk.model or model
            if chunk.usage is not None:
                usage = chunk.usage
            for choice in chunk.choices:
                if choice.delta and choice.delta.content:
                    pieces.append(choice.delta.content)
    finally:
        await stream.close()
    details = getattr(usage, "prompt_tokens_details", None) if usage else None
    return Reply("".join(pieces), usage.prompt_tokens if usage else 0,
                 usage.completion_tokens if usage else 0, model,
                 cached_tokens=int(getattr(details, "cached_tokens", 0) or 0))
