"""The judge's response cache in the signal store, keyed by the exact request: a hit spends
nothing (no call, no tokens: the original cost is not repeated), is redacted on the way out
like an answer, and is recorded in the telemetry; only replies the caller validated are
cached."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from split_assets.judge.call_policy import parsed_reply
from split_assets.judge.chat_transport import redacted
from split_assets.judge.replies import Reply
from split_assets.lib.redact import Redactor
from split_assets.store.signals import SignalStore


class ReplyCache:
    """The cache of one fingerprint's calls."""

    def __init__(self, store: SignalStore, fingerprint: str, redact: Redactor) -> None:
        self.store, self.fingerprint, self.redact = store, fingerprint, redact

    def put(self, key: str, reply: Reply) -> None:
        if not reply.cache_hit:
            record = {"text": reply.text, "prompt_tokens": reply.prompt_tokens,
                      "completion_tokens": reply.completion_tokens,
                      "reported_model": reply.reported_model}
            self.store.cache_put(key, orjson.dumps(record).decode())

    def get(self, key: str, question_id: str,
            parse: Callable[[str], Any] | None) -> Reply | None:
        cached = self.store.cache_get(key)
        if cached is None:
            return None
        record = orjson.loads(cached)  # a store of an earlier release may hold a secret
        reply = redacted(Reply(record["text"], 0, 0, record.get("reported_model"),
                               cache_hit=True), self.redact)
        self.store.record_call(self.fingerprint, question_id, 0, "cache_hit", 0.0,
                               cache_hit=True, reported_model=reply.reported_model)
        return parsed_reply(reply, parse)
