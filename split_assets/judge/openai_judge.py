"""The openai judge: the seven prompts through any OpenAI-compatible endpoint, one call per
wrong answer (see ``render.py``), output validated by pydantic, one repair call when invalid."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson
from pydantic import ValidationError, model_validator

from split_assets.judge.base import JudgeCase, JudgeOutcome
from split_assets.judge.chat_client import (
    CallFailed,
    ChatClient,
    Prepared,
    Reply,
    outcome_of,
    tls_context,
)
from split_assets.judge.render import (
    OPEN_TOOL,
    render_messages,
    static_prompt,
    templates_for,
)
from split_assets.judge.schema import Diagnosis
from split_assets.lib.canonical import sha256_hex
from split_assets.settings import DiagConfig, OpenAIJudgeConfig
from split_assets.store.signals import SignalStore

_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.MULTILINE)
REPAIR = ("That answer is not a valid diagnosis: {error}. Answer again with ONE JSON object "
          "only, exactly in the schema of the system message.")


class JudgedDiagnosis(Diagnosis):
    """A model's diagnosis: the schema (``schema.py``) and the rules the prompts state, which
    a model can break and the schema sent in ``json_schema`` mode does not express (strict
    mode wants a plain object at the root, not an ``anyOf``): a lapse (T1) has no evolution
    target, a defect (T2) has exactly one, and an ambiguous item is a lapse. Kept here, in
    the openai judge's own fingerprint: the rules judge never emits such a verdict."""

    @model_validator(mode="after")
    def _prompt_rules(self) -> JudgedDiagnosis:
        if self.tier == "T1" and self.evolution_target is not None:
            raise ValueError("a T1 (lapse) has no evolution_target: give null")
        if self.tier == "T2" and self.evolution_target is None:
            raise ValueError("a T2 (defect) names one evolution_target (skill:, prompt: or "
                             "tool:)")
        if self.cause_category == "ambiguous_item" and self.tier != "T1":
            raise ValueError("an ambiguous_item is a T1 (lapse)")
        return self


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
        return JudgedDiagnosis.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'object'}: {e['msg']}"
                             for e in exc.errors()[:4])
        raise ValueError(problems) from None


# keywords OpenAI's strict structured outputs refuse; pydantic still checks them on the answer
_UNSUPPORTED_IN_STRICT = ("minLength", "maxLength")


def _without(schema: Any, keys: tuple[str, ...]) -> Any:
    if isinstance(schema, dict):
        return {k: _without(v, keys) for k, v in schema.items() if k not in keys}
    if isinstance(schema, list):
        return [_without(v, keys) for v in schema]
    return schema


def diagnosis_response_format() -> dict[str, Any]:
    """``response_format`` for ``json_schema``: the strict schema of the Diagnosis model
    (openai's own conversion: every field required, no additional properties)."""
    from openai.lib._pydantic import to_strict_json_schema

    schema = _without(to_strict_json_schema(Diagnosis), _UNSUPPORTED_IN_STRICT)
    return {"type": "json_schema",
            "json_schema": {"name": "diagnosis", "strict": True, "schema": schema}}


def request_params(settings: OpenAIJudgeConfig) -> dict[str, Any]:
    """The call settings sent with every request (what the endpoint is asked)."""
    params: dict[str, Any] = {"temperature": settings.temperature,
                              "max_tokens": settings.max_tokens}
    if settings.response_format == "json_object":
        params["response_format"] = {"type": "json_object"}
    elif settings.response_format == "json_schema":
        params["response_format"] = diagnosis_response_format()
    return params


def prepare_request(settings: OpenAIJudgeConfig, model: str,
                    messages: list[dict[str, str]]) -> Prepared:
    """A request's body as canonical JSON and its sha256, the response cache's key. Encoded
    once: the same bytes are hashed and sent."""
    payload = {"model": model, "messages": messages, **request_params(settings)}
    body = orjson.dumps(payload, option=orjson.OPT_SORT_KEYS)
    return Prepared(messages, body, sha256_hex(body), payload)


class OpenAIJudge:
    """Diagnoses through ``openai.AsyncOpenAI`` under the governance of ``diag.openai``."""

    name = "openai"

    def __init__(self, diag: DiagConfig) -> None:
        self.diag = diag
        self.context = diag.context
        self.open_tool = diag.rules.open_tool  # read by the prompts like the rules judge reads it
        self._client: ChatClient | None = None
        self._templates: dict[str, str] = {}
        tls_context()  # built in the background while the inputs load

    def settings(self) -> dict[str, Any]:
        settings = self.diag.openai.fingerprinted()
        if self.context == "full" and self.open_tool != OPEN_TOOL:  # default: key left out
            settings["open_tool"] = self.open_tool
        return settings

    def required_templates(self) -> tuple[str, ...]:
        return templates_for(self.context)

    def source_files(self) -> list[Path]:
        here = Path(__file__).resolve().parent
        # what decides a verdict: the schema, the prompts' rendering, the repair loop; the
        # chat client (retries, telemetry, cache) is left out, so fixing it never forces a
        # paid re-diagnosis
        return [*(here / name for name in ("openai_judge.py", "render.py", "schema.py")),
                here.parent / "sources" / "trace_steps.py"]

    def estimated_calls_per_question(self) -> int:
        return 1

    def estimated_tokens(self, case: JudgeCase, templates: dict[str, str]) -> int:
        """Prompt characters / 4 plus a quarter of the completion budget."""
        return sum(self.token_estimate(case, templates))

    def token_estimate(self, case: JudgeCase,
                       templates: dict[str, str]) -> tuple[int, int, int]:
        """(prompt tokens shared by every call -- what a provider's prefix cache can reuse --,
        the case's own prompt tokens, completion tokens): characters / 4, and a quarter of
        the completion budget."""
        system, head = static_prompt(templates, self.context)
        messages = render_messages(templates, case, self.context, self.open_tool)
        prefix = len(system) + len(head)
        total = sum(len(m["content"]) for m in messages)
        return prefix // 4, (total - prefix) // 4, self.diag.openai.max_tokens // 4

    def request_key(self, case: JudgeCase, templates: dict[str, str]) -> str | None:
        """The response-cache key of the first call for ``case`` (the dry run's estimate)."""
        messages = render_messages(templates, case, self.context, self.open_tool)
        return prepare_request(self.diag.openai, self.diag.model, messages).key

    def start(self, store: SignalStore, fingerprint: str, templates: dict[str, str]) -> None:
        """Open the chat client (inside the event loop that will diagnose)."""
        self._templates = templates
        self._client = ChatClient(self.diag.openai, self.diag.model, store, fingerprint,
                                      concurrency=self.diag.concurrency,
                                      start=self.diag.start_concurrency)

    @property
    def max_in_flight(self) -> int:
        """The most calls it will have in flight (the runner starts twice as many workers)."""
        return self.diag.concurrency

    def concurrency_history(self) -> list[tuple[float, int]]:
        """The learned concurrency limit over this pass: (seconds, limit) at each change."""
        return list(self._client.limit.history) if self._client is not None else []

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    def messages(self, case: JudgeCase) -> list[dict[str, str]]:
        return render_messages(self._templates, case, self.context, self.open_tool)

    async def diagnose(self, case: JudgeCase) -> JudgeOutcome:
        assert self._client is not None, "start() the judge first"
        messages = self.messages(case)
        spent: list[Reply] = []
        reason = "no valid diagnosis"
        for _ in range(2):  # the call, then at most one repair call showing the error
            request = prepare_request(self.diag.openai, self.diag.model, messages)
            try:
                reply = await self._client.complete(request, case.question.question_id,
                                                    parse_diagnosis)
            except CallFailed as exc:  # no answer at all: not a verdict, not even a degraded one
                return outcome_of(None, str(exc), spent, call_failed=True)
            spent.append(reply)
            if reply.error is not None:
                reason = f"invalid output: {reply.error}"
                messages = [*messages, {"role": "assistant", "content": reply.text},
                            {"role": "user", "content": REPAIR.format(error=reply.error)}]
                continue
            self._client.remember(request.key, reply)
            return outcome_of(reply.parsed, None, spent)
        return outcome_of(None, reason, spent)
