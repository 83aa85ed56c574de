"""Places for requests in flight, handed out first come, first served: ``FifoSlots`` holds the
limit, how many are in flight and who waits; ``concurrency.AdaptiveLimit`` learns the limit."""

from __future__ import annotations

import asyncio
import time
from collections import deque


class FifoSlots:
    """At most ``limit`` in flight; a waiter woken too early keeps its turn. ``history`` holds
    (seconds since the start, limit) at every change."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.in_flight = 0
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._started = time.monotonic()
        self.history: list[tuple[float, int]] = [(0.0, self.limit)]

    async def take_place(self) -> int:
        """Wait (first come, first served) until fewer than the limit are in flight; the
        level the request is sent at (ours in flight, it included)."""
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
        return self.in_flight

    def give_back(self) -> None:
        self.in_flight -= 1
        self._wake()

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
