"""A compact console logger: one line per message on stderr, no tracebacks.

Progress only: the CLI reports a failed run itself as one ``error:`` line, so Dagster's failure
events (a failed step, check or run, the steps it skipped) are not shown; the full error stays
in the run's event log (the Dagster UI shows it).
"""

import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from dagster import Field, InitLoggerContext, logger

_EVENTS = {"STEP_START", "STEP_SUCCESS", "ASSET_MATERIALIZATION", "ASSET_CHECK_EVALUATION",
           "RUN_SUCCESS"}


class _Progress(logging.Filter):
    """Keep the events a user follows and our own messages; drop Dagster's plumbing and its
    failure chatter (our code logs at INFO and WARNING; Dagster's "Dependencies for step ...
    Not executing" lines are ERROR)."""

    def filter(self, record: logging.LogRecord) -> bool:
        meta = getattr(record, "dagster_meta", None) or {}
        event = meta.get("dagster_event")
        if event is not None:
            if event.event_type_value == "ASSET_CHECK_EVALUATION":
                return bool(event.event_specific_data.passed)
            return event.event_type_value in _EVENTS
        return logging.INFO <= record.levelno < logging.ERROR


class _OneLine(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        meta = getattr(record, "dagster_meta", None) or {}
        message = str(meta.get("orig_message") or record.getMessage())
        event = meta.get("dagster_event")
        parts = [self.formatTime(record, "%H:%M:%S")]
        if meta.get("step_key"):
            parts.append(str(meta["step_key"]))
        if event is not None:
            parts.append(event.event_type_value)
        first = message.strip().splitlines()[0] if message.strip() else ""
        return " ".join(parts) + (f" - {first}" if first else "")


@logger(config_schema={"log_level": Field(str, is_required=False, default_value="DEBUG")},
        description="One line per message on stderr, without tracebacks.")
def compact_console_logger(init_context: InitLoggerContext) -> logging.Logger:
    level = str(init_context.logger_config["log_level"]).upper()  # DEBUG shows the events
    log = logging.Logger("split_assets", level=getattr(logging, level, logging.INFO))
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_OneLine())
    handler.addFilter(_Progress())
    log.addHandler(handler)
    return log


# what Dagster itself writes to stderr, bypassing the loggers, before it raises the error the
# CLI reports as its one line (its instance's database went away: instance_storage_error)
_DAGSTER_STDERR = ("Exception while writing logger call to event log",)


class _WithoutDagsterNoise:
    """sys.stderr, less Dagster's own direct writes of ``_DAGSTER_STDERR``."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        return len(text) if text.startswith(_DAGSTER_STDERR) else self._stream.write(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextmanager
def without_dagster_noise() -> Iterator[None]:
    """While a run executes: stderr without Dagster's direct writes the CLI reports itself."""
    stream = sys.stderr
    sys.stderr = _WithoutDagsterNoise(stream)
    try:
        yield
    finally:
        sys.stderr = stream
