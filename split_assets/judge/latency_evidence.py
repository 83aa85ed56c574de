"""What the endpoint's answers showed about its parallelism (``concurrency.py`` decides on
it): each request's ``Ticket`` (the level it was sent at), the ``Wave`` of requests sent under
one limit, and the ``Evidence`` -- the no-load latency and each level's recent latencies."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from statistics import median

FAST = 1.5  # an answer within FAST x the no-load latency was not queued
LEVEL_SAMPLES = 8  # recent latencies kept per level
BASE_SAMPLES = 16  # recent no-load latencies kept


@dataclass(frozen=True)
class Ticket:
    """One request's place: the level it was sent at (ours in flight, it included), when,
    the limit then, and the wave it belongs to."""

    level: int
    sent: float
    limit: int
    wave: int


@dataclass
class Wave:
    """The requests sent under one limit: how many answers it waits for, and their latencies."""

    number: int
    size: int
    latencies: list[float] = field(default_factory=list)


class Evidence:
    """What the answers showed: the no-load latency (recent answers known unqueued), each
    level's recent latencies, and which answers were cold (left out of both once the endpoint
    is seen to report its prompt cache)."""

    def __init__(self) -> None:
        self.base: deque[tuple[float, Ticket | None]] = deque(maxlen=BASE_SAMPLES)
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
                              maxlen=BASE_SAMPLES)
            for level, samples in list(self.levels.items()):
                kept = [x for x in samples if x[1] not in self._cold]
                self.levels[level] = deque(kept, maxlen=LEVEL_SAMPLES)
                if not kept:
                    del self.levels[level]
        return uncached and self.caches

    def add(self, ticket: Ticket, latency_s: float, to_base: bool) -> None:
        if to_base and (not self.base or ticket.level <= self.known):
            self.base.append((latency_s, ticket))
        self.levels.setdefault(ticket.level, deque(maxlen=LEVEL_SAMPLES)).append(
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
