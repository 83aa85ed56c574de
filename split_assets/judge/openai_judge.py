"""The openai judge: the seven prompts through any OpenAI-compatible endpoint, one call per
wrong answer (see ``render.py``), output validated by pydantic, one repair call when invalid."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson
from pydantic import ValidationError

from split_assets.config import DiagConfig
from split_assets.data.signals import SignalStore
from split_assets.judge.base import Diagnosis, JudgeCase, JudgeOutcome
from split_assets.judge.governed import CallFailed, GovernedClient, Reply, tls_context
from split_assets.judge.render import render_messages, templates_for

_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.MULTILINE)
REPAIR = ("That answer is not a valid diagnosis: {error}. Answer again with ONE JSON object "
          "only, exactly in the schema of the system message.")


def parse_diagnosis(text: str) -> Diagnosis:
    """The diagnosis in a model's answer (code fences and surrounding prose tolerated)."""
    body = _FENCE.sub("", text.strip())
    start, end = body.find("{"), body.rfind("}")
    if start < 0 or end <= start:
        raise ValueError("no JSON object found")
    try:
        data = orjson.loads(body[start:end + 1])
    except orjson.JSONDecodeError as exc:
        raise ValueError(f"invalid JSON ({exc.msg})") from None
    try:
        return Diagnosis.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'object'}: {e['msg']}"
                             for e in exc.errors()[:4])
        raise ValueError(problems) from None


class OpenAIJudge:
    """Diagnoses through ``openai.AsyncOpenAI`` under the governance of ``diag.openai``."""

    name = "openai"

    def __init__(self, diag: DiagConfig) -> None:
        self.diag = diag
        self.context = diag.context
        self._client: GovernedClient | None = None
        self._templates: dict[str, str] = {}
        tls_context()  # built in the background while the inputs load

    def settings(self) -> dict[str, Any]:
        return self.diag.openai.fingerprinted()

    def required_templates(self) -> tuple[str, ...]:
        return templates_for(self.context)

    def source_files(self) -> list[Path]:
        here = Path(__file__).resolve().parent
        return [here / name for name in ("openai_judge.py", "governed.py", "render.py",
                                         "base.py")]

    def estimated_calls_per_question(self) -> int:
        return 1

    def estimated_tokens(self, case: JudgeCase, templates: dict[str, str]) -> int:
        """Prompt characters / 4 plus a quarter of the completion budget."""
        chars = sum(len(m["content"]) for m in render_messages(templates, case, self.context))
        return chars // 4 + self.diag.openai.max_tokens // 4

    def start(self, store: SignalStore, fingerprint: str, templates: dict[str, str]) -> None:
        """Open the governed client (inside the event loop that will diagnose)."""
        self._templates = templates
        self._client = GovernedClient(self.diag.openai, self.diag.model, store, fingerprint,
                                      concurrency=self.diag.concurrency)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    def messages(self, case: JudgeCase) -> list[dict[str, str]]:
        return render_messages(self._templates, case, self.context)

    async def diagnose(self, case: JudgeCase) -> JudgeOutcome:
        assert self._client is not None, "start() the judge first"
        messages = self.messages(case)
        spent: list[Reply] = []
        reason = "no valid diagnosis"
        for _ in range(2):  # the call, then at most one repair call showing the error
            request = self._client.prepare(messages)
            try:
                reply = await self._client.complete(request, case.question.question_id)
            except CallFailed as exc:
                reason = str(exc)
                break
            spent.append(reply)
            try:
                diagnosis = parse_diagnosis(reply.text)
            except ValueError as exc:
                reason = f"invalid output: {exc}"
                messages = [*messages, {"role": "assistant", "content": reply.text},
                            {"role": "user", "content": REPAIR.format(error=exc)}]
                continue
            self._client.remember(request.key, reply)
            return _outcome(diagnosis, None, spent)
        return _outcome(None, reason, spent)


def _outcome(diagnosis: Diagnosis | None, reason: str | None, spent: list[Reply]) -> JudgeOutcome:
    return JudgeOutcome(
        diagnosis=diagnosis, degraded_reason=reason,
        calls=sum(r.attempts for r in spent), cache_hits=sum(r.cache_hit for r in spent),
        prompt_tokens=sum(r.prompt_tokens for r in spent),
        completion_tokens=sum(r.completion_tokens for r in spent),
        latency_ms=sum(r.latency_ms for r in spent),
        reported_model=next((r.reported_model for r in reversed(spent) if r.reported_model),
                            None))
