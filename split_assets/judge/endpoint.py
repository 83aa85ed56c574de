"""The transport facts of an OpenAI-compatible endpoint the chat client acts on: the TLS
context (built once, in the background), what a dropped connection and a ``Retry-After`` say,
and the 400 of an endpoint that does not support the configured response format."""

from __future__ import annotations

import os
import ssl
import threading
import time
from concurrent.futures import Future
from email.utils import parsedate_to_datetime

import aiohttp
import httpx2  # the openai client's HTTP layer: its TLS defaults are used as they are
import openai

from split_assets.config_keys import config_key
from split_assets.errors import UserError


def timeout_or_reset(exc: BaseException) -> str:
    """The aiohttp transport reports a dropped connection as a connect *timeout*; the cause
    chain tells the two apart, so telemetry says what happened."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, aiohttp.ServerTimeoutError | aiohttp.SocketTimeoutError |
                      TimeoutError):
            return "timeout"
        if isinstance(seen, aiohttp.ClientConnectionError):
            return "connection_error"
        seen = seen.__cause__ or seen.__context__
    return "timeout"


def retry_after(exc: Exception) -> float | None:
    response = getattr(exc, "response", None)
    value = response.headers.get("retry-after") if response is not None else None
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        try:
            return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
        except (TypeError, ValueError):
            return None


_TLS: dict[tuple[str | None, str | None], Future[ssl.SSLContext]] = {}
_TLS_LOCK = threading.Lock()


def tls_context() -> Future[ssl.SSLContext]:
    """The client's default TLS context (CA bundle; SSL_CERT_FILE / SSL_CERT_DIR honoured, as
    the client would), built once per process in a background thread: reading the CA bundle
    takes ~50 ms, which then overlaps with loading the inputs instead of delaying the first
    call. Call it early (the judge does, when it is built); ``.result()`` waits for it."""
    key = (os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
    with _TLS_LOCK:
        future = _TLS.get(key)
        if future is None:
            future = _TLS[key] = Future()
            # not a daemon: a process that exits (a refused command) while OpenSSL reads the
            # CA bundle waits the few ms for it, instead of finalizing under a running thread
            threading.Thread(target=_build_tls, args=(future,), daemon=False,
                             name="split-assets-tls").start()
    return future


def _build_tls(future: Future[ssl.SSLContext]) -> None:
    try:
        future.set_result(httpx2.create_ssl_context(verify=True, trust_env=True))
    except BaseException as exc:  # noqa: BLE001 - handed to whoever waits for it
        future.set_exception(exc)


_MODE_WORDS = ("response_format", "json_schema", "json_object", "structured", "schema")


def refused_mode(exc: openai.APIStatusError, mode: str) -> UserError | None:
    """A 400 that names the response format: the endpoint does not support the configured
    mode. No fallback (answers of two modes under one fingerprint would mix two judges)."""
    text = str(exc.message or "").lower()
    if exc.status_code != 400 or mode == "text" or not any(w in text for w in _MODE_WORDS):
        return None
    other = "json_object or text" if mode == "json_schema" else "text"
    return UserError(f"the endpoint refused response_format {mode} (400: "
                     f"{' '.join(str(exc.message).split())[:160]})",
                     config_key("response_format"),
                     f"set it to {other} (a new fingerprint), or use an endpoint that "
                     f"supports {mode}")
