"""How many requests to keep in flight: learned from the endpoint, ``diag.concurrency`` the
upper bound.

A self-hosted server (llama.cpp's ``llama-server --parallel N``, vLLM, Ollama, SGLang) serves
N requests at once and queues the rest: a request sent while ``n`` of ours are in flight (it
included: its *level*) is served at once when ``n <= N`` and waits for an earlier one
otherwise. So answers that come back about as fast as an unqueued one (within ``FAST`` times
the no-load latency) show that the endpoint serves at least ``n`` at once, and answers that
come back slow show queueing from the level they were sent at. The limit follows that
evidence:

- **startup**: ``diag.concurrency`` when it is given (``judge probe --write`` writes what it
  measured), else where the last run of this judge ended (its telemetry), else ``START``: one
  request, so nothing queues before the endpoint has shown it serves more than one at once (a
  first wave of eight on a one-slot server keeps seven waiting, each behind the others). Once
  a wave -- the requests sent under one limit -- has all come back with nothing queued, the
  limit grows to ``GROWTH`` times the largest level that came back fast (but only doubles
  past ``GENTLE_FROM``: the requests of an overshoot reach the server in no fixed order, and the
  more of them queue, the less their latencies tell): an endpoint with many slots (a hosted
  API) is filled within a few round trips, and a wave never outruns its own evidence.
- **queueing seen** (most answers sent at level ``n`` or above came back slow, two at least,
  one of them from ``n`` itself): the limit drops below ``n``; it grows again by a quarter at
  most, up to just under ``n``, and a cap older than ``PROBE_AFTER`` no-load latencies is
  raised by one, so a server that frees slots is used again.
- **no-load latency**: the median of recent answers sent at levels that did not queue. A
  server's first answers are slower (its prefix cache is cold): an answer that reused no cached
  prompt tokens, from an endpoint that reports them, is left out of it. When the first wave's
  answers are too far apart to tell queueing from a cold start (then to one), or queueing is
  first seen (and at most every ``PROBE_AFTER`` no-load latencies after), the limit is halved
  until as many
  answers as that half have come back from requests sent at or under it (a **drain**, as BBR
  drains its queue to measure the round-trip time); they set the no-load latency, and every
  level's evidence is judged again against it.
- **halved** on a timeout, a 429 or a 503 (once per round trip: the answers of one burst
  count once); a request that timed out keeps its place in the count for one more no-load
  latency -- the server is still working on it -- so its retry waits behind it.

With ``adapt`` off the limit is the ceiling. ``history`` holds (seconds since the start,
limit) at every change, for telemetry and the ``diagnosis_signals`` metadata.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque

from split_assets.judge.fifo_slots import FifoSlots
from split_assets.judge.latency_evidence import BASE_SAMPLES, FAST, Evidence, Ticket, Wave
from split_assets.settings.judge_sections import START_CONCURRENCY

START = START_CONCURRENCY  # in flight before anything is known
GROWTH = 4  # startup: the limit grows to GROWTH x the largest level seen fast
GENTLE_FROM = 16  # ... and doubles from this level on (an overshoot queues fewer)
PROBE_AFTER = 40  # no-load latencies between two probes (a cap raised, a drain)


class AdaptiveLimit(FifoSlots):
    """Requests in flight at once, learned from the answers' latencies (module docstring)."""

    def __init__(self, ceiling: int, adapt: bool = True, start: int = START) -> None:
        self.ceiling = max(1, ceiling)
        self.adapt = adapt
        super().__init__(min(self.ceiling, start) if adapt else self.ceiling)
        self.cap: int | None = None  # queueing seen from this level on
        self.evidence = Evidence()
        self._wave = Wave(1, self.limit)
        self._drain: int | None = None  # the limit held while draining
        self._drain_samples: list[float] = []
        self._trusted = False  # the no-load latency is measured (not a first guess)
        self._probed_at = self._cut_at = float("-inf")

    @property
    def no_load_s(self) -> float | None:
        """The latency of an unqueued request (median of recent ones), once one is known."""
        return self.evidence.no_load_s

    @property
    def known(self) -> int:
        """The most requests the endpoint was seen to serve at once."""
        return self.evidence.known

    async def acquire(self) -> Ticket:
        """Wait (first come, first served) until fewer than the limit are in flight."""
        level = await self.take_place()
        return Ticket(level, time.monotonic(), self.limit, self._wave.number)

    def release(self, ticket: Ticket) -> None:
        """The request ended without telling anything about the endpoint's parallelism."""
        del ticket
        self.give_back()

    def answered(self, ticket: Ticket, latency_s: float,
                 cached_tokens: int | None = None) -> None:
        """The endpoint answered (valid or not) after ``latency_s``, reusing
        ``cached_tokens`` prompt tokens from its cache (None: it does not say)."""
        if self.adapt:
            self._learn(ticket, latency_s, cached_tokens == 0)
        self.release(ticket)

    def overloaded(self, ticket: Ticket, timed_out: bool) -> None:
        """A timeout, a 429 or a 503: halve (once per round trip). A request that timed out
        keeps its place for one more no-load latency: the server is still working on it."""
        if not self.adapt:
            self.release(ticket)
            return
        if ticket.sent > self._cut_at:
            self._cut_at = time.monotonic()
            self._lower_cap(max(1, ticket.limit // 2) + 1)
            self._update()
        hold = self.no_load_s if timed_out else None
        if hold:
            asyncio.get_running_loop().call_later(hold, self.release, ticket)
        else:
            self.release(ticket)

    def _learn(self, ticket: Ticket, latency_s: float, uncached: bool) -> None:
        evidence = self.evidence
        cold = evidence.cold(ticket, uncached)
        if self._drain is not None:
            if ticket.level <= self._drain and not cold:
                self._drain_samples.append(latency_s)
            if len(self._drain_samples) >= max(2, self._drain):  # measured again
                evidence.base = deque(((x, None) for x in self._drain_samples),
                                      maxlen=BASE_SAMPLES)
                self._drain, self._drain_samples, self._trusted = None, [], True
                self._recap()
        if not cold:
            evidence.add(ticket, latency_s, to_base=self._drain is None)
        if ticket.wave == self._wave.number:
            self._wave.latencies.append(latency_s)
        evidence.refresh(self.cap)
        if self._drain is None:
            self._judge()
        self._update()

    def _judge(self) -> None:
        """After each answer: cap where queueing shows, probe an old cap, or (a wave come
        back whole with nothing queued) grow."""
        base = self.no_load_s or 0.0
        wave = self._wave
        if not self._trusted:  # the first wave: its answers far apart are queued, or cold
            if len(wave.latencies) >= 2 and max(wave.latencies) > FAST * min(wave.latencies):
                self._start_drain(1)  # measure at the one level that cannot queue
                return
            self._trusted = len(wave.latencies) >= wave.size
        queued_from = self.evidence.queued_from() if self._trusted else None
        if queued_from is not None and (self.cap is None or queued_from < self.cap):
            self._lower_cap(queued_from)
            if time.monotonic() - self._probed_at > PROBE_AFTER * base:
                self._start_drain()
        elif self.cap is not None and time.monotonic() - self._probed_at > PROBE_AFTER * base:
            self._probed_at = time.monotonic()
            self.cap += 1  # the endpoint may serve more by now: fresh evidence from the cap on
            for level in [lv for lv in self.evidence.levels if lv >= self.cap - 1]:
                del self.evidence.levels[level]
        elif self.cap is None and self._trusted and len(wave.latencies) >= wave.size:
            self._grow(min(GROWTH * self.known, max(GENTLE_FROM, 2 * self.known)))

    def _recap(self) -> None:
        """The evidence judged again against a no-load latency just measured."""
        self.evidence.refresh(self.cap)
        self.cap = self.evidence.queued_from()
        self._probed_at = time.monotonic()

    def _lower_cap(self, level: int) -> None:
        self.cap = max(2, level if self.cap is None else min(self.cap, level))
        self._probed_at = time.monotonic()
        self.evidence.refresh(self.cap)

    def _start_drain(self, to: int | None = None) -> None:
        self._drain = to or max(1, min(self.limit, self.cap or self.limit) // 2)
        self._drain_samples = []
        self._probed_at = time.monotonic()

    def _grow(self, target: int) -> None:
        target = min(self.ceiling, target)
        if target > self.limit:
            self._wave = Wave(self._wave.number + 1, target)
            self._set(target)

    def _update(self) -> None:
        if self._drain is not None:
            target = self._drain
        elif self.cap is None:
            target = self.limit
        else:
            target = min(self.cap - 1, max(self.limit, self.known + max(1, self.known // 4)))
        self._set(max(1, min(self.ceiling, target)))
