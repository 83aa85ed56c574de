"""How long one attempt may take, on an endpoint whose speed is learned (``diag.openai.
adaptive``): a timeout is there to catch a request that is stuck, not one that is slow for a
known reason -- a cold prompt cache, or a queue of this run's own requests in front of it.

An attempt's budget is its own time and the wait behind the requests ahead of it:

- **its own time**: ``SAFETY`` times what an unqueued attempt should take -- the no-load
  latency the concurrency limit measured (``concurrency.py``), or before that (the run's first
  calls, whose prompt the server has not cached yet) the prompt's tokens at the slowest
  prompt-processing rate earlier calls of this judge measured (the signal store's telemetry),
  or ``timeout_max_s`` when none did; never less than the configured ``timeout_s`` (the whole
  call) or ``ttft_timeout_s`` (a stream's first token), never more than ``timeout_max_s``.
- **the wait**: every other request of this run that may be served before it is ahead of it
  -- those in flight when it is sent (the first wave's included), and those sent with it in
  the same burst, which reach the server in no fixed order: as many as the limit it was sent
  under allows -- and ``SAFETY`` times the time they take to drain comes on top. They drain
  at the rate answers have been coming back (answers in the last two no-load latencies): the
  parallelism the endpoint actually showed, one at a time until two answers have come back,
  one no-load latency each. A request is never abandoned because the run's own requests were
  queued first. Before anything is measured (a first wave of ``diag.concurrency`` given, no
  telemetry) the wait is one more ``timeout_max_s`` at most: nothing tells how long the queue
  is, and a stuck endpoint must still be given up on within the hour.

With ``adaptive`` off the configured values are used as they are.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from split_assets.judge.concurrency import AdaptiveLimit, Ticket
from split_assets.settings import OpenAIJudgeConfig

SAFETY = 3.0
_RATES = 64  # recent prompt-processing rates kept
_ANSWERS = 1024  # recent answer times kept
_WINDOW = 2.0  # no-load latencies of answers the drain rate is measured over


@dataclass(frozen=True)
class Budget:
    """Seconds for the whole attempt, and for a stream's first token."""

    total_s: float
    first_token_s: float


class TimeBudget:
    """The time budget of each attempt (module docstring)."""

    def __init__(self, settings: OpenAIJudgeConfig, limit: AdaptiveLimit,
                 earlier_rates: list[float],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.settings = settings
        self.limit = limit
        self.clock = clock
        # prompt tokens processed per second, measured (earlier runs', then this run's)
        self._rates = [r for r in earlier_rates if r > 0][-_RATES:]
        self._answers: deque[float] = deque(maxlen=_ANSWERS)  # when each answer came back
        self._started = clock()

    def observe(self, prompt_tokens: int, cached_tokens: int, latency_s: float) -> None:
        """An answer: when it came back, and the rate it processed its uncached prompt at (an
        underestimate: the latency includes the answer's own tokens)."""
        self._answers.append(self.clock())
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

    def drain_s(self, expected: float) -> float:
        """Seconds per request ahead: the mean interval between this run's answers over the
        last ``_WINDOW`` no-load latencies (idle time included: it errs long), else one
        no-load latency (one at a time)."""
        now = self.clock()
        window = min(_WINDOW * expected, now - self._started)
        recent = 0
        for at in reversed(self._answers):
            if at < now - window:
                break
            recent += 1
        return window / recent if recent >= 2 else expected

    @property
    def ceiling(self) -> float:
        s = self.settings
        return max(s.timeout_max_s, s.timeout_s, s.ttft_timeout_s)

    def of(self, ticket: Ticket, prompt_chars: int) -> Budget:
        s = self.settings
        if not s.adaptive:
            return Budget(s.timeout_s, s.ttft_timeout_s)
        expected = self.expected_s(prompt_chars)
        ahead = max(ticket.level, ticket.limit) - 1
        if expected is None:
            wait = self.ceiling if ahead else 0.0
            return Budget(self.ceiling + wait, self.ceiling + wait)
        wait = SAFETY * ahead * self.drain_s(expected)
        own = SAFETY * expected
        return Budget(wait + min(self.ceiling, max(s.timeout_s, own)),
                      wait + min(self.ceiling, max(s.ttft_timeout_s, own)))
