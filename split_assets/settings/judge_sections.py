"""The judge's sections of the config (``diag.rules``, ``diag.openai``), and the base every
section shares: unknown keys are errors, values are strict (``settings/loading.py`` loads the
file)."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class Section(BaseModel):
    # strict: "600", true or 7.0 are not integers; a float key still accepts an integer
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


START_CONCURRENCY = 1  # the openai judge's first wave when nothing says more (concurrency.py)


class RulesJudgeConfig(Section):
    """Parameters of the offline rules judge (fingerprint components)."""

    step_limit_stop_reasons: list[str] = Field(
        default_factory=lambda: ["max_steps"],
        description="Stop reasons meaning the agent hit its step limit.")
    open_tool: str = Field(default="open_node", description="The tool that opens a tree node, "
                           "for the rules judge and the openai judge's prompts alike.")


class PriceConfig(Section):
    """USD per million tokens (``diag.openai.price``; not fingerprinted): the dry run's cost."""

    input: float = Field(ge=0, description="USD per million input tokens.")
    cached_input: float = Field(ge=0, description="USD per million cached input tokens.")
    output: float = Field(ge=0, description="USD per million output tokens.")


class OpenAIJudgeConfig(Section):
    """The openai judge: call settings (fingerprinted) and governance (not fingerprinted).

    The endpoint and key come from the environment only: OPENAI_BASE_URL, OPENAI_API_KEY.
    """

    LEGACY_KEYS: ClassVar[tuple[str, ...]] = ("json_mode",)  # read, then rewritten

    temperature: float = Field(default=0.0, ge=0.0, le=2.0,
                               description="The sampling temperature of each call.")
    max_tokens: int = Field(default=800, ge=16, description="The most tokens of an answer.")
    # json_schema: the strict schema of the Diagnosis model; json_object: any JSON object;
    # text: no constraint. Replaces json_mode (true -> json_object, false -> text).
    response_format: Literal["json_schema", "json_object", "text"] = Field(
        default="json_object", description="`json_schema` (the diagnosis' strict schema), "
        "`json_object` or `text`.")
    stream: bool = Field(default=False, description="Stream the answer (enables the TTFT and "
                         "inter-token timeouts).")
    timeout_s: float = Field(default=120.0, gt=0, description="Seconds per call in all; with "
                             "adaptive, a floor.")
    ttft_timeout_s: float = Field(default=30.0, gt=0, description="Seconds to the first token; "
                                  "with adaptive, a floor.")
    inter_token_timeout_s: float = Field(default=15.0, gt=0, description="Seconds between two "
                                         "tokens; with adaptive, a floor.")
    max_retries: int = Field(default=6, ge=0, description="Retries of a call (429, 5xx, "
                             "timeouts, connection errors).")
    backoff_base_s: float = Field(default=1.0, ge=0, description="The first wait between "
                                  "retries, in seconds.")
    backoff_max_s: float = Field(default=60.0, ge=0, description="The longest wait between "
                                 "retries, in seconds.")
    breaker_threshold: int = Field(default=10, ge=1, description="Consecutive failed attempts "
                                   "that stop the run.")
    # learn the endpoint: its parallelism (a one-slot local server gets one request at a time,
    # a hosted API up to diag.concurrency) and its speed (time budgets: judge/budget.py);
    # false: always diag.concurrency in flight, timeout_s and ttft_timeout_s as they are
    adaptive: bool = Field(default=True, description="Learn how many calls the endpoint "
                           "serves at once and how long a call takes; false: always "
                           "diag.concurrency in flight and the timeouts as configured.")
    timeout_max_s: float = Field(  # the longest budget an attempt gets
        default=900.0, gt=0, description="The longest an attempt's own time may be (the wait "
        "behind the run's earlier requests comes on top).")
    price: PriceConfig | None = Field(default=None, description="USD per million tokens, for "
                                      "the dry run's cost.")

    @model_validator(mode="before")
    @classmethod
    def _json_mode(cls, data: Any) -> Any:
        """``json_mode`` (earlier releases) is read as ``response_format``."""
        if isinstance(data, dict) and "json_mode" in data:
            data = dict(data)
            legacy = data.pop("json_mode")
            if "response_format" in data:
                raise ValueError("json_mode and response_format both set: keep only "
                                 "response_format (json_mode is its earlier spelling)")
            if not isinstance(legacy, bool):
                raise ValueError("json_mode must be true or false (better: response_format: "
                                 "json_object or text)")
            data["response_format"] = "json_object" if legacy else "text"
        return data

    def fingerprinted(self) -> dict[str, Any]:
        """The settings that change what the endpoint answers. ``json_object`` and ``text``
        keep the key of earlier releases (``json_mode`` true / false), so their fingerprints
        stay."""
        settings: dict[str, Any] = {"temperature": self.temperature,
                                    "max_tokens": self.max_tokens}
        if self.response_format == "json_schema":
            settings["response_format"] = "json_schema"
        else:
            settings["json_mode"] = self.response_format == "json_object"
        return settings
