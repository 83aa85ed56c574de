"""How a self-hosted inference server serves requests, for the test server (``FakeLLM``'s
``slots``): llama.cpp's ``llama-server --parallel N`` and vLLM (``--max-num-seqs``) serve N
requests at once and queue the rest first come, first served; a request costs a fixed part,
its prompt tokens the slot has not cached, and its output tokens; each slot keeps the prompt
it last served as its prefix cache (llama.cpp picks the free slot whose cache shares the most
with the new prompt, ``--slot-prompt-similarity``); a request whose client gave up keeps its
slot until it is done (the server does not notice the closed connection while it computes).

A hosted API is many slots with a latency that varies (``jitter_s``).

Requests sent at once reach a real server in no fixed order (each on its own connection):
``arrival_jitter_s`` delays each by a random part before it queues. ``time_scale`` runs a slow
server in little time: every modelled second lasts ``time_scale`` seconds (a 60-s call at
0.01 takes 0.6 s), and ``scaled_judge_times`` gives the judge's configured times the same
scale, so that a test of a minute-long call keeps its timeouts in proportion."""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass, field

# the judge's configured times (diag.openai), scaled with the server by scaled_judge_times
JUDGE_TIMES = ("timeout_s", "ttft_timeout_s", "inter_token_timeout_s", "timeout_max_s",
               "backoff_base_s", "backoff_max_s")


def scaled_judge_times(time_scale: float) -> dict[str, float]:
    """``diag.openai``'s default times on a server's ``time_scale`` (a config section)."""
    from split_assets.settings import OpenAIJudgeConfig  # not when run as a script

    fields = OpenAIJudgeConfig.model_fields
    return {key: fields[key].default * time_scale for key in JUDGE_TIMES}


def common_prefix(a: str, b: str) -> int:
    """Length of the longest common prefix (binary search on slices: C speed)."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


@dataclass
class SlotModel:
    """``slots`` requests served at once; a request takes ``base_s + prompt_s_per_token x
    (prompt tokens not cached in its slot) + output_s_per_token x output tokens`` (+ a uniform
    ``[0, jitter_s)``), in modelled seconds of ``time_scale`` real ones each; it reaches the
    queue after a uniform ``[0, arrival_jitter_s)``. Tokens are characters / 4, as the test
    server counts them."""

    slots: int
    base_s: float = 0.0
    prompt_s_per_token: float = 0.0
    output_s_per_token: float = 0.0
    jitter_s: float = 0.0
    seed: int = 0
    arrival_jitter_s: float = 0.0
    time_scale: float = 1.0
    # what the tests read: most requests served at once, and most waiting at once
    max_active: int = field(default=0, init=False)
    max_waiting: int = field(default=0, init=False)
    served: int = field(default=0, init=False)
    costs: list[float] = field(default_factory=list, init=False)  # modelled s, in order served

    def __post_init__(self) -> None:
        if self.slots < 1:
            raise ValueError("slots must be at least 1")
        self._rng = random.Random(self.seed)
        self._caches = [""] * self.slots
        self._free = list(range(self.slots))
        self._semaphore: asyncio.Semaphore | None = None
        self._active = self._waiting = 0

    def start(self) -> None:
        """Bind to the running loop (the server's)."""
        self._semaphore = asyncio.Semaphore(self.slots)

    def _pick(self, prompt: str) -> tuple[int, int]:
        """The free slot sharing the longest prefix with ``prompt``, and that prefix (chars)."""
        best = max(self._free, key=lambda i: common_prefix(self._caches[i], prompt))
        self._free.remove(best)
        return best, common_prefix(self._caches[best], prompt)

    async def serve(self, prompt: str, output_chars: int) -> int:
        """Wait for a slot, hold it for the request's cost; the prompt tokens its slot had
        cached (``usage.prompt_tokens_details.cached_tokens``)."""
        assert self._semaphore is not None, "start() the slot model on the server's loop"
        if self.arrival_jitter_s:
            await asyncio.sleep(self.arrival_jitter_s * self.time_scale * self._rng.random())
        self._waiting += 1
        if self._semaphore.locked():  # every slot busy: this one waits, behind the others
            self.max_waiting = max(self.max_waiting, self._waiting)
        async with self._semaphore:
            self._waiting -= 1
            self._active += 1
            self.max_active = max(self.max_active, self._active)
            slot, shared = self._pick(prompt)
            cached = shared // 4
            cost = (self.base_s + self.prompt_s_per_token * (len(prompt) // 4 - cached)
                    + self.output_s_per_token * (output_chars // 4)
                    + self.jitter_s * self._rng.random())
            try:
                await asyncio.sleep(cost * self.time_scale)
            finally:
                self._caches[slot] = prompt
                self._free.append(slot)
                self._active -= 1
                self.served += 1
                self.costs.append(cost)
        return cached
