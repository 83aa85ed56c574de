"""How long one attempt may take, on an endpoint whose speed is learned (``diag.openai.
adaptive``): a timeout is there to catch a request that is stuck, not one that is slow for a
known reason -- a cold prompt cache, or a queue of our own requests in front of it.

- Before anything is measured (the run's first calls, whose prompt the server has not cached
  yet): the prompt's tokens at the slowest prompt-processing rate earlier calls of this judge
  measured (the signal store's telemetry), or ``timeout_max_s`` when none did.
- Then: the no-load latency the concurrency limit measured (``concurrency.py``), times the
  queue the request was sent into (its level over the parallelism seen, rounded up).

Either way ``SAFETY`` times that, never less than the configured ``timeout_s`` (the whole
call) or ``ttft_timeout_s`` (a stream's first token), never more than ``timeout_max_s``.
With ``adaptive`` off the configured values are used as they are.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from split_assets.judge.concurrency import AdaptiveLimit, Ticket
from split_assets.settings import OpenAIJudgeConfig

SAFETY = 3.0
_RATES = 64  # recent prompt-processing rates kept


@dataclass(frozen=True)
class Budget:
    """Seconds for the whole attempt, and for a stream's first token."""

    total_s: float
    first_token_s: float


class TimeBudget:
    """The time budget of each attempt (module docstring)."""

    def __init__(self, settings: OpenAIJudgeConfig, limit: AdaptiveLimit,
                 earlier_rates: list[float]) -> None:
        self.settings = settings
        self.limit = limit
        # prompt tokens processed per second, measured (earlier runs', then this run's)
        self._rates = [r for r in earlier_rates if r > 0][-_RATES:]

    def observe(self, prompt_tokens: int, cached_tokens: int, latency_s: float) -> None:
        """An answer: the rate it processed its uncached prompt at (an underestimate: the
        latency includes the answer's own tokens)."""
        uncached = prompt_tokens - cached_tokens
        if uncached > 0 and latency_s > 0:
            self._rates = [*self._rates[-(_RATES - 1):], uncached / latency_s]

    def expected_s(self, prompt_chars: int) -> float | None:
        """What an unqueued attempt should take, if anything is measured."""
        if self.limit.no_load_s is not None:
            return self.limit.no_load_s
        if self._rates:  # a cold prompt: all of it processed, at the slowest rate seen
            return prompt_chars / 4 / min(self._rates)
        return None

    def of(self, ticket: Ticket, prompt_chars: int) -> Budget:
        s = self.settings
        if not s.adaptive:
            return Budget(s.timeout_s, s.ttft_timeout_s)
        ceiling = max(s.timeout_max_s, s.timeout_s, s.ttft_timeout_s)
        expected = self.expected_s(prompt_chars)
        if expected is None:
            return Budget(ceiling, ceiling)
        queue = math.ceil(ticket.level / max(1, self.limit.known))
        wanted = SAFETY * expected * queue
        return Budget(min(ceiling, max(s.timeout_s, wanted)),
                      min(ceiling, max(s.ttft_timeout_s, wanted)))
