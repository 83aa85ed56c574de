"""How many requests to keep in flight: learned from the endpoint, ``diag.concurrency`` the
upper bound.

A self-hosted server (llama.cpp's ``llama-server --parallel N``, vLLM, Ollama, SGLang) serves
N requests at once and queues the rest: a request sent while ``n`` of ours are in flight (it
included: its *level*) is served at once when ``n <= N`` and waits for an earlier one
otherwise. So answers that come back about as fast as an unqueued one (within ``FAST`` times
the no-load latency) show that the endpoint serves at least ``n`` at once, and answers that
come back slow show queueing from the level they were sent at. The limit follows that
evidence:

- **startup**: ``START`` requests (or the ceiling, if lower). Once a wave -- the requests sent
  under one limit -- has all come back with nothing queued, the limit grows to ``GROWTH``
  times the largest level that came back fast: an endpoint with many slots (a hosted API) is
  filled within a few round trips, and a wave never outruns its own evidence.
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
from dataclasses import dataclass, field
from statistics import median

from split_assets.config_judge import START_CONCURRENCY

START = START_CONCURRENCY  # in flight before anything is known (diag.concurrency unless given)
GROWTH = 4  # startup: the limit grows to GROWTH x the largest level seen fast
FAST = 1.5  # an answer within FAST x the no-load latency was not queued
PROBE_AFTER = 40  # no-load latencies between two probes (a cap raised, a drain)
_LEVEL_SAMPLES = 8
_BASE_SAMPLES = 16


@dataclass(frozen=True)
class Ticket:
    """One request's place: the level it was sent at (ours in flight, it included), when,
    the limit then, and the wave it belongs to."""

    level: int
    sent: float
    limit: int
    wave: int


@dataclass
class _Wave:
    """The requests sent under one limit: how many answers it waits for, and their latencies."""

    number: int
    size: int
    latencies: list[float] = field(default_factory=list)


class _Evidence:
    """What the answers showed: the no-load latency (recent answers known unqueued), each
    level's recent latencies, and which answers were cold (left out of both once the endpoint
    is seen to report its prompt cache)."""

    def __init__(self) -> None:
        self.base: deque[tuple[float, Ticket | None]] = deque(maxlen=_BASE_SAMPLES)
        self.levels: dict[int, deque[tuple[float, Ticket | None]]] = {}
        self.caches = False  # the endpoint reports prompt tokens served from its cache
        self._cold: set[Ticket] = set()
        self.threshold = float("inf")  # FAST x the no-load latency
        self.known = 1  # the most requests the endpoint was seen to serve at once

    @property
    def no_load_s(self) -> float | None:
        return median(x for x, _ in self.base) if self.base else None

    def cold(self, ticket: Ticket, uncached: bool) -> bool:
        """Whether an answer is cold; the first answer that reused cached tokens shows that
        the endpoint reports them, and every earlier one that reused none was cold."""
        if uncached and not self.caches:
            self._cold.add(ticket)
        elif not uncached and not self.caches:
            self.caches = True
            self.base = deque((x for x in self.base if x[1] not in self._cold),
                              maxlen=_BASE_SAMPLES)
            for level, samples in list(self.levels.items()):
                kept = [x for x in samples if x[1] not in self._cold]
                self.levels[level] = deque(kept, maxlen=_LEVEL_SAMPLES)
                if not kept:
                    del self.levels[level]
        return uncached and self.caches

    def add(self, ticket: Ticket, latency_s: float, to_base: bool) -> None:
        if to_base and (not self.base or ticket.level <= self.known):
            self.base.append((latency_s, ticket))
        self.levels.setdefault(ticket.level, deque(maxlen=_LEVEL_SAMPLES)).append(
            (latency_s, ticket))

    def refresh(self, cap: int | None) -> None:
        """The threshold, and the largest level (under the cap) most of whose recent answers
        came back within it (``known``)."""
        base = self.no_load_s
        self.threshold = limit = FAST * base if base is not None else float("inf")
        fast = [lv for lv, lat in self.levels.items() if (cap is None or lv < cap)
                and 2 * sum(x <= limit for x, _ in lat) >= len(lat)]
        self.known = max(fast, default=1)

    def queued_from(self) -> int | None:
        """The lowest level (2 or more) from which most recent answers, two at least, came
        back slow, one of them from that level."""
        fast = slow = 0
        lowest = None
        for level in sorted(self.levels, reverse=True):
            mine = [x <= self.threshold for x, _ in self.levels[level]]
            slow += mine.count(False)
            fast += mine.count(True)
            if level >= 2 and slow >= 2 and slow > fast and not all(mine):
                lowest = level
        return lowest


class AdaptiveLimit:
    """Requests in flight at once, learned from the answers' latencies (module docstring)."""

    def __init__(self, ceiling: int, adapt: bool = True, start: int = START) -> None:
        self.ceiling = max(1, ceiling)
        self.adapt = adapt
        self.limit = min(self.ceiling, start) if adapt else self.ceiling
        self.in_flight = 0
        self.cap: int | None = None  # queueing seen from this level on
        self.evidence = _Evidence()
        self._wave = _Wave(1, self.limit)
        self._drain: int | None = None  # the limit held while draining
        self._drain_samples: list[float] = []
        self._trusted = False  # the no-load latency is measured (not a first guess)
        self._probed_at = self._cut_at = float("-inf")
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._started = time.monotonic()
        self.history: list[tuple[float, int]] = [(0.0, self.limit)]

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
        if self.in_flight >= self.limit or self._waiters:
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                while True:
                    await waiter
                    if self.in_flight < self.limit:
                        break
                    waiter = asyncio.get_running_loop().create_future()
                    self._waiters.appendleft(waiter)  # woken too early: keeps its turn
            except asyncio.CancelledError:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)
                self._wake()  # a place it was given goes to the next one
                raise
        self.in_flight += 1
        return Ticket(self.in_flight, time.monotonic(), self.limit, self._wave.number)

    def release(self, ticket: Ticket) -> None:
        """The request ended without telling anything about the endpoint's parallelism."""
        del ticket
        self.in_flight -= 1
        self._wake()

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
                                      maxlen=_BASE_SAMPLES)
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
            self._grow(GROWTH * self.known)

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
            self._wave = _Wave(self._wave.number + 1, target)
            self._set(target)

    def _update(self) -> None:
        if self._drain is not None:
            target = self._drain
        elif self.cap is None:
            target = self.limit
        else:
            target = min(self.cap - 1, max(self.limit, self.known + max(1, self.known // 4)))
        self._set(max(1, min(self.ceiling, target)))

    def _set(self, target: int) -> None:
        if target != self.limit:
            self.limit = target
            self.history.append((round(time.monotonic() - self._started, 3), target))
            self._wake()

    def _wake(self) -> None:
        free = self.limit - self.in_flight
        while free > 0 and self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                free -= 1
