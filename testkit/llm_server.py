"""A real local HTTP server that speaks the OpenAI chat-completions API (stdlib only).

Tests and benchmarks use it to drive a governed LLM client through real sockets. It can
inject retries, ``Retry-After``, connection resets, stalls (timeouts), and malformed or
schema-invalid answers.

An ``echo`` action puts a request header's value (the ``Authorization`` header by default:
``Bearer <key>``) into what it answers, as a misconfigured endpoint or debugging proxy would: the
answer's rationale and the reported model, a 4xx/5xx error body, or a stream's error event;
plain, JSON-escaped or unicode-escaped (``ECHO_STYLES``), and when streamed in chunks that split
the value.

It uses ``asyncio.start_server`` with HTTP/1.1 keep-alive, and needs no per-request threads,
so a single process handles many concurrent ``openai.AsyncOpenAI`` connections.

In-process use::

    with FakeLLM(latency_s=0.01) as server:
        server.script(Action("status", status=429, retry_after=1.5), Action("reset"))
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="k")
        ...
        assert server.statuses == [429, 0, 200]

Foreground use (for example, a benchmark in its own process)::

    python testkit/llm_server.py --port 0 --latency 0.2
    # stdout: "READY http://127.0.0.1:<port>/v1" ... on SIGTERM/SIGINT: "REQUESTS <n>"
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import http
import json
import math
import signal
import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

try:
    from testkit.program_replies import program_reply
    from testkit.slots import SlotModel, common_prefix
except ImportError:  # run as a script (python testkit/llm_server.py): its own folder
    from program_replies import program_reply  # type: ignore[no-redef]
    from slots import SlotModel, common_prefix  # type: ignore[no-redef]

KINDS = frozenset(
    {"ok", "status", "reset", "stall_first", "stall_mid", "invalid_json", "schema_invalid", "text",
     "stream_error"}
)
ECHO_STYLES = frozenset({"plain", "json", "unicode"})
SCHEMA_MODES = frozenset({"enforce", "ignore", "refuse"})  # what json_schema does here
INSTRUCTION = "Reply with exactly this JSON:"  # an unconstrained model follows it
_ECHO = "@@ECHO@@"  # where the echoed value goes in a JSON text (json.dumps keeps it as it is)
INVALID_JSON_CONTENT = "I think the answer is T2 because"
SCHEMA_INVALID_CONTENT = '{"tier": "T9", "confidence": 3}'
STREAM_PIECES = 4
_MAX_HEADER_BYTES = 1 << 20


@dataclass
class Action:
    """What the server does with one chat-completions request.

    kind:
      ``ok``             200 with ``content``, or the default diagnosis JSON if it is None.
      ``status``         the error ``status`` with an OpenAI-style error body. ``retry_after``
                         adds a ``Retry-After`` header.
      ``reset``          aborts the socket without a response (the client sees a connection error).
      ``stall_first``    sleeps ``stall_s`` before the first body byte. Non-stream: before the
                         response. Stream: after the headers, before the first chunk.
      ``stall_mid``      stream: sends 2 pieces, sleeps ``stall_s``, then continues. Non-stream:
                         sends the headers and half of the body, sleeps, then sends the rest.
      ``invalid_json``   content is prose, not JSON (``content`` overrides it).
      ``schema_invalid`` content is JSON that violates the diagnosis schema (``content`` overrides).
      ``text``           content is ``content`` as given (``""`` if None).
      ``stream_error``   stream: the first piece of the answer, then an error event (``data:
                         {"error": {...}}``, as vLLM sends one mid-stream). Non-stream: a 500.

    echo: a style of ``ECHO_STYLES`` puts the value of the request's ``echo_header`` into the
    answer: ``ok`` -- the default diagnosis's rationale ends with it, and the reported model
    carries it; ``status`` and ``stream_error`` -- the error message carries it. ``plain`` is
    json.dumps's own escaping; ``json`` also escapes ``/`` as ``\\/`` and ``<``, ``>``, ``&`` as
    ``\\u003c`` ... (PHP's and Go's encoders); ``unicode`` writes every character as ``\\uXXXX``.
    Streamed, the pieces are cut inside the echoed text.
    """

    kind: str = "ok"
    status: int = 200
    retry_after: float | None = None
    stall_s: float = 0.0
    content: str | None = None
    echo: str | None = None
    echo_header: str = "authorization"

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown Action kind {self.kind!r}; expected one of {sorted(KINDS)}")
        if self.echo is not None and self.echo not in ECHO_STYLES:
            raise ValueError(f"unknown echo style {self.echo!r}; expected one of "
                             f"{sorted(ECHO_STYLES)}")
        if self.kind == "status" and not 100 <= self.status <= 599:
            raise ValueError(f"invalid status {self.status}")


# (request JSON body, 0-based global request index) -> Action. None means the default Action().
Responder = Callable[[dict, int], "Action | None"]


# --------------------------------------------------------------------------- content helpers


def message_text(content: Any) -> str:
    """Get the text of a message ``content`` (a string or a list of content parts)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(part.get("text", "")) if isinstance(part, dict) else str(part) for part in content
        )
    return json.dumps(content, sort_keys=True)


def last_user_text(body: dict) -> str:
    for message in reversed(body.get("messages") or []):
        if isinstance(message, dict) and message.get("role") == "user":
            return message_text(message.get("content"))
    return ""


def prompt_text(body: dict) -> str:
    """Every message's text, in order: the prompt a slot caches."""
    return "\n".join(message_text(m.get("content")) for m in body.get("messages") or []
                     if isinstance(m, dict))


def instructed_reply(body: dict) -> str | None:
    """What the last user message tells the model to answer word for word (after
    ``INSTRUCTION``), if anything: a model follows it unless a grammar (an enforced
    ``json_schema``) keeps it to the schema -- how ``judge probe`` tells the two apart."""
    text = last_user_text(body)
    at = text.find(INSTRUCTION)
    return text[at + len(INSTRUCTION):].strip() if at >= 0 else None


def default_diagnosis(body: dict) -> dict:
    """The valid diagnosis for a request. It depends only on the last user message's text."""
    digest = hashlib.sha256(last_user_text(body).encode("utf-8")).digest()
    if digest[0] % 2 == 0:
        return {
            "tier": "T2",
            "error_type": "retrieval",
            "cause_category": "missed_evidence",
            "evolution_target": "skill:counting",
            "rationale": "The answer missed frames that hold the counted objects; "
            "improving the counting skill should recover them.",
            "confidence": 0.8,
        }
    return {
        "tier": "T1",
        "error_type": "retrieval",
        "cause_category": "missed_evidence",
        "evolution_target": None,
        "rationale": "The evidence was retrievable but overlooked; a local fix suffices.",
        "confidence": 0.8,
    }


def default_content(body: dict) -> str:
    """A DSPy program's or an optimizer's reply for their calls (``program_replies``), else the
    judge's valid diagnosis."""
    reply = program_reply(body)
    return reply if reply is not None else json.dumps(default_diagnosis(body))


def _split_pieces(content: str, n: int = STREAM_PIECES, cuts: tuple[int, ...] = ()) -> list[str]:
    """``n`` pieces of about the same size, also cut at ``cuts``."""
    if not content:
        return [""]
    size = max(1, math.ceil(len(content) / n))
    points = sorted({*range(size, len(content), size), *(c for c in cuts if 0 < c < len(content))})
    return [content[a:b] for a, b in zip([0, *points], [*points, len(content)], strict=True)]


def escape_echo(value: str, style: str) -> str:
    """``value`` as it goes inside a JSON string in ``style`` (see ``Action``)."""
    if style == "unicode":
        units = value.encode("utf-16-be")
        return "".join(f"\\u{int.from_bytes(units[i:i + 2], 'big'):04x}"
                       for i in range(0, len(units), 2))
    text = json.dumps(value)[1:-1]
    if style == "json":
        for char, escaped in (("/", "\\/"), ("<", "\\u003c"), (">", "\\u003e"),
                              ("&", "\\u0026")):
            text = text.replace(char, escaped)
    return text


def _echoed(value: Any, echo: str | None, style: str | None) -> str:
    """json.dumps(value), the echoed value in place of ``_ECHO``."""
    text = json.dumps(value)
    return text.replace(_ECHO, escape_echo(echo or "", style)) if style else text


def _cuts(text: str, echo: str | None, style: str | None) -> tuple[int, ...]:
    """Where a stream cuts the echoed value: at its thirds."""
    if not style or not echo:
        return ()
    escaped = escape_echo(echo, style)
    start = text.find(escaped)
    if start < 0:
        return ()
    return (start + len(escaped) // 3, start + 2 * len(escaped) // 3)


CACHE_BLOCK_TOKENS = 64  # providers cache prompt prefixes in blocks (e.g. vLLM 16, OpenAI 128)
PROMPT_MEMORY = 8  # earlier prompts the prefix cache compares with (the first ones seen)


def _error_body(status: int, message: str | None = None) -> dict:
    """An OpenAI-style error body."""
    if status == 401:
        err_type, code = "invalid_request_error", "invalid_api_key"
        message = message or "Incorrect API key provided"
    elif status == 429:
        err_type, code = "requests", "rate_limit_exceeded"
        message = message or "Rate limit reached for requests. Please try again later."
    elif status == 404:
        err_type, code = "invalid_request_error", "model_not_found"
        message = message or "The model does not exist or you do not have access to it."
    elif status >= 500:
        err_type, code = "server_error", None
        message = message or "The server had an error while processing your request."
    else:
        err_type, code = "invalid_request_error", None
        message = message or f"Request failed with status {status}."
    return {"error": {"message": message, "type": err_type, "param": None, "code": code}}


def _reason(status: int) -> str:
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return "Unknown"


def _fmt_seconds(value: float) -> str:
    return f"{value:g}"


# --------------------------------------------------------------------------- server


class _Request:
    __slots__ = ("method", "path", "headers", "body", "keep_alive")

    def __init__(
        self, method: str, path: str, headers: dict[str, str], body: bytes, keep_alive: bool
    ) -> None:
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body
        self.keep_alive = keep_alive


class FakeLLM:
    """A local OpenAI-compatible chat-completions server. See the module docstring.

    Attributes that tests can read (they are thread-safe to read):
      ``requests``       each chat-completions request body received, in arrival order.
      ``statuses``       the status decided for each request (0 for a reset). It has the same index
                         as ``requests``, and is recorded when the request is admitted.
      ``request_times``  the ``time.monotonic()`` arrival time of each request (same index).
      ``keys``           the API key (bearer token) each chat request carried.
      ``open_requests``  chat requests admitted whose answer is not yet written out (a fault
                         bench reads it at the moment it kills a client: the calls in flight).
    """

    def __init__(
        self,
        responder: Responder | None = None,
        latency_s: float = 0.0,
        model_reported: str = "fake-model-1",
        host: str = "127.0.0.1",
        port: int = 0,
        slots: SlotModel | None = None,
        schema_mode: str = "enforce",
    ) -> None:
        if schema_mode not in SCHEMA_MODES:
            raise ValueError(f"schema_mode {schema_mode!r}: one of {sorted(SCHEMA_MODES)}")
        self.responder = responder
        self.latency_s = latency_s
        self.slots = slots  # None: every request served at once after latency_s
        self.schema_mode = schema_mode
        self.model_reported = model_reported
        self.host = host
        self.port = port
        self.requests: list[dict] = []
        self.statuses: list[int] = []
        self.request_times: list[float] = []
        self._lock = threading.RLock()
        self._script: deque[Action] = deque()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop_event: asyncio.Event | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._start_error: BaseException | None = None
        self._conns: set[asyncio.Task] = set()
        self._prompts: list[str] = []  # for the prefix cache's cached_tokens
        self.keys: list[str] = []  # the bearer key of each chat request (tests of .env files)
        self.open_requests = 0

    # ---------------------------------------------------------------- public API

    @property
    def base_url(self) -> str:
        host = "127.0.0.1" if self.host in ("", "0.0.0.0") else self.host
        if ":" in host:
            host = f"[{host}]"
        return f"http://{host}:{self.port}/v1"

    def script(self, *actions: Action) -> None:
        """Queue actions for the next requests. After the queue empties, the responder or default
        behaviour resumes. Requests rejected for their API key do not use a queued action."""
        with self._lock:
            self._script.extend(actions)

    @property
    def pending_script(self) -> int:
        with self._lock:
            return len(self._script)

    def clear(self) -> None:
        """Forget the recorded requests and statuses, and any pending script."""
        with self._lock:
            self.requests.clear()
            self.statuses.clear()
            self.request_times.clear()
            self.keys.clear()
            self._script.clear()

    def start(self) -> FakeLLM:
        """Serve in a daemon thread with its own event loop; returns once listening."""
        if self._thread is not None:
            raise RuntimeError("FakeLLM already started")
        self._ready.clear()
        self._start_error = None
        self._thread = threading.Thread(target=self._thread_main, name="FakeLLM", daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("FakeLLM did not start listening within 10 s")
        if self._start_error is not None:
            self._thread.join(5)
            self._thread = None
            raise RuntimeError("FakeLLM failed to start") from self._start_error
        return self

    def stop(self) -> None:
        thread, loop, stop_event = self._thread, self._loop, self._stop_event
        if thread is None:
            return
        if loop is not None and stop_event is not None:
            with contextlib.suppress(RuntimeError):  # the loop may have closed already
                loop.call_soon_threadsafe(stop_event.set)
        thread.join(10)
        self._thread = None

    def __enter__(self) -> FakeLLM:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    async def serve_forever(
        self,
        on_ready: Callable[[], None] | None = None,
        install_signal_handlers: bool = False,
    ) -> None:
        """Serve on the running loop until ``stop()`` is called (or SIGTERM/SIGINT arrives, if
        ``install_signal_handlers`` is true)."""
        loop = asyncio.get_running_loop()
        self._loop = loop
        self._stop_event = asyncio.Event()
        if self.slots is not None:
            self.slots.start()
        server = await asyncio.start_server(
            self._handle, self.host, self.port, limit=_MAX_HEADER_BYTES, backlog=1024
        )
        self.port = server.sockets[0].getsockname()[1]
        if install_signal_handlers:
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, self._stop_event.set)
        try:
            if on_ready is not None:
                on_ready()
            await self._stop_event.wait()
        finally:
            server.close()
            conns = list(self._conns)
            for task in conns:
                task.cancel()
            await asyncio.gather(*conns, return_exceptions=True)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(server.wait_closed(), 5)
            if install_signal_handlers:
                for sig in (signal.SIGTERM, signal.SIGINT):
                    loop.remove_signal_handler(sig)

    # ---------------------------------------------------------------- internals

    def _thread_main(self) -> None:
        try:
            asyncio.run(self.serve_forever(on_ready=self._ready.set))
        except BaseException as exc:  # surfaced to start() if it happened before listening
            if not self._ready.is_set():
                self._start_error = exc
                self._ready.set()
            else:
                traceback.print_exc()

    def _admit(self, body: dict, forced_status: int | None = None) -> tuple[int, Action | None]:
        """Record the request and decide what to do with it. The result has the same index as
        ``requests``."""
        with self._lock:
            index = len(self.requests)
            self.requests.append(body)
            self.request_times.append(time.monotonic())
            if forced_status is not None:
                self.statuses.append(forced_status)
                return index, None
            if self._script:
                action: Action | None = self._script.popleft()
            elif self.responder is not None:
                try:
                    action = self.responder(body, index)
                except Exception:
                    traceback.print_exc()
                    action = Action("status", status=500)
            else:
                action = None
            if action is None:
                action = Action()
            if action.kind == "reset":
                self.statuses.append(0)
            elif action.kind == "status":
                self.statuses.append(action.status)
            else:
                self.statuses.append(200)
            return index, action

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._conns.add(task)
        try:
            while True:
                request = await self._read_request(reader)
                if request is None:
                    break
                keep = await self._dispatch(request, writer)
                if not keep or not request.keep_alive:
                    break
        except asyncio.CancelledError:
            # Only stop() cancels connection tasks. Do not re-raise: Python 3.11's
            # StreamReaderProtocol callback calls task.exception() and logs a spurious traceback.
            writer.transport.abort()
        except (
            ConnectionError,
            asyncio.IncompleteReadError,
            asyncio.LimitOverrunError,
            ValueError,
            UnicodeDecodeError,
        ):
            writer.transport.abort()
        except Exception:
            traceback.print_exc()
            writer.transport.abort()
        finally:
            if task is not None:
                self._conns.discard(task)
            writer.close()

    async def _read_request(self, reader: asyncio.StreamReader) -> _Request | None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError:
            return None  # the peer closed the keep-alive connection
        lines = head.lstrip(b"\r\n").decode("latin-1").split("\r\n")
        parts = lines[0].split()
        if len(parts) != 3:
            raise ValueError(f"bad request line {lines[0]!r}")
        method, target, version = parts
        headers: dict[str, str] = {}
        for line in lines[1:]:
            if line:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
        if "chunked" in headers.get("transfer-encoding", "").lower():
            body = await self._read_chunked(reader)
        else:
            length = int(headers.get("content-length") or 0)
            body = await reader.readexactly(length) if length > 0 else b""
        connection = headers.get("connection", "").lower()
        if version == "HTTP/1.0":
            keep_alive = "keep-alive" in connection
        else:
            keep_alive = "close" not in connection
        return _Request(method.upper(), target.split("?", 1)[0], headers, body, keep_alive)

    @staticmethod
    async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
        chunks = []
        while True:
            size_line = await reader.readuntil(b"\r\n")
            size = int(size_line.split(b";", 1)[0].strip(), 16)
            if size == 0:
                while (await reader.readuntil(b"\r\n")) != b"\r\n":  # trailers
                    pass
                return b"".join(chunks)
            chunks.append(await reader.readexactly(size))
            await reader.readexactly(2)

    async def _dispatch(self, request: _Request, writer: asyncio.StreamWriter) -> bool:
        path = request.path.rstrip("/")
        if path in ("/v1/chat/completions", "/chat/completions"):
            if request.method != "POST":
                return await self._send_error(writer, 405, request.keep_alive, "Use POST.")
            with self._lock:
                self.open_requests += 1
            try:
                return await self._chat(request, writer)
            finally:
                with self._lock:
                    self.open_requests -= 1
        if path in ("/v1/models", "/models") and request.method == "GET":
            payload = {"object": "list", "data": [self._model_object()]}
            return await self._send_json(writer, 200, payload, request.keep_alive)
        if path.startswith(("/v1/models/", "/models/")) and request.method == "GET":
            return await self._send_json(writer, 200, self._model_object(), request.keep_alive)
        return await self._send_error(
            writer, 404, request.keep_alive, f"Unknown route {request.method} {request.path}"
        )

    def _model_object(self) -> dict:
        return {"id": self.model_reported, "object": "model", "created": 0, "owned_by": "fake"}

    async def _chat(self, request: _Request, writer: asyncio.StreamWriter) -> bool:
        keep_alive = request.keep_alive
        try:
            body = json.loads(request.body or b"{}")
        except ValueError:
            body = None
        if not isinstance(body, dict):
            self._admit({"_invalid_body": request.body[:200].decode("utf-8", "replace")}, 400)
            return await self._send_error(writer, 400, keep_alive, "Request body is not JSON.")

        auth = request.headers.get("authorization", "")
        key = auth[7:].strip() if auth[:7].lower() == "bearer " else ""
        with self._lock:
            self.keys.append(key)
        if not key or key == "bad-key":
            self._admit(body, 401)
            await self._sleep(self.latency_s)
            message = (
                "Incorrect API key provided"
                if key
                else "You didn't provide an API key. Use an Authorization header (Bearer auth)."
            )
            if not key:
                payload = _error_body(401, message)
                payload["error"]["code"] = None
                return await self._send_json(writer, 401, payload, keep_alive)
            return await self._send_error(writer, 401, keep_alive, message)

        mode = (body.get("response_format") or {}).get("type")
        if mode == "json_schema" and self.schema_mode == "refuse":
            self._admit(body, 400)
            return await self._send_error(writer, 400, keep_alive, "response_format type "
                                          "json_schema is not supported by this server")
        index, action = self._admit(body)
        assert action is not None
        if action.kind == "reset":
            writer.transport.abort()
            return False
        if self.slots is None:
            await self._sleep(self.latency_s)
        # the header's text as the client sent it (UTF-8; the head is read as latin-1)
        echo = request.headers.get(action.echo_header, "").encode("latin-1").decode(
            "utf-8", "replace") if action.echo else None
        if action.kind == "status" or action.kind == "stream_error" and not body.get("stream"):
            await self._sleep(action.stall_s)
            extra = []
            if action.retry_after is not None:
                extra.append(("Retry-After", _fmt_seconds(action.retry_after)))
            status = action.status if action.kind == "status" else 500
            payload = _error_body(status, self._echo_message(action, status))
            return await self._send_json(writer, status, payload, keep_alive, extra,
                                         echo=echo, style=action.echo)

        content = self._content_for(action, body, echo)
        instructed = instructed_reply(body)
        if instructed is not None and action.kind == "ok" and action.content is None and not (
                mode == "json_schema" and self.schema_mode == "enforce"):
            content = instructed  # an unconstrained model does as it is told
        if self.slots is not None:  # queued for a slot, then the request's cost in it
            # a server generates at most max_tokens (the content is left whole)
            limit = body.get("max_tokens")
            out = min(len(content), 4 * limit) if isinstance(limit, int) else len(content)
            cached = await self.slots.serve(prompt_text(body), out)
            body = {**body, "_slot_cached_tokens": cached}
        if body.get("stream"):
            return await self._send_stream(writer, body, index, action, content, keep_alive,
                                           echo)
        return await self._send_completion(writer, body, index, action, content, keep_alive,
                                           echo)

    @staticmethod
    def _echo_message(action: Action, status: int) -> str | None:
        """An error's message; with ``echo``, ending with the echoed header."""
        if not action.echo:
            return action.content
        message = action.content or _error_body(status)["error"]["message"]
        return f"{message} ({action.echo_header}: {_ECHO})"

    def _model(self, action: Action) -> str:
        """The reported model; with ``echo``, carrying the echoed header."""
        return f"{self.model_reported} ({_ECHO})" if action.echo else self.model_reported

    @staticmethod
    def _content_for(action: Action, body: dict, echo: str | None = None) -> str:
        if action.echo and action.kind in ("ok", "stream_error") and action.content is None:
            diagnosis = default_diagnosis(body)
            diagnosis["rationale"] += f" (the request's {action.echo_header}: {_ECHO})"
            return _echoed(diagnosis, echo, action.echo)
        if action.kind == "invalid_json":
            return action.content if action.content is not None else INVALID_JSON_CONTENT
        if action.kind == "schema_invalid":
            return action.content if action.content is not None else SCHEMA_INVALID_CONTENT
        if action.kind == "text":
            return action.content or ""
        return action.content if action.content is not None else default_content(body)

    def _usage(self, body: dict, content: str) -> dict:
        """Tokens are characters / 4. ``cached_tokens``: like a provider's automatic prefix
        cache, the longest prefix this prompt shares with any earlier prompt, in whole blocks
        of ``CACHE_BLOCK_TOKENS`` (reported in ``prompt_tokens_details``)."""
        text = "\x00".join(
            f"{m.get('role')}\x01{message_text(m.get('content'))}"
            for m in body.get("messages") or []
            if isinstance(m, dict)
        )
        with self._lock:
            shared = max((common_prefix(text, seen) for seen in self._prompts), default=0)
            if len(self._prompts) < PROMPT_MEMORY:
                self._prompts.append(text)
        prompt_chars = sum(
            len(message_text(m.get("content")))
            for m in body.get("messages") or []
            if isinstance(m, dict)
        )
        prompt, completion = prompt_chars // 4, len(content) // 4
        cached = min(prompt, shared // 4 // CACHE_BLOCK_TOKENS * CACHE_BLOCK_TOKENS)
        if "_slot_cached_tokens" in body:  # slot mode: what the request's slot had cached
            cached = min(prompt, body["_slot_cached_tokens"])
        return {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cached},
        }

    async def _send_completion(
        self,
        writer: asyncio.StreamWriter,
        body: dict,
        index: int,
        action: Action,
        content: str,
        keep_alive: bool,
        echo: str | None = None,
    ) -> bool:
        payload = {
            "id": f"chatcmpl-fake{index:06d}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self._model(action),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content, "refusal": None},
                    "logprobs": None,
                    "finish_reason": "stop",
                }
            ],
            "usage": self._usage(body, content),
        }
        data = _echoed(payload, echo, action.echo).encode("utf-8")
        head = self._head(200, "application/json", keep_alive, length=len(data), index=index)
        if action.kind == "stall_first":
            await self._sleep(action.stall_s)
        if action.kind == "stall_mid":
            half = len(data) // 2
            writer.write(head + data[:half])
            await writer.drain()
            await self._sleep(action.stall_s)
            writer.write(data[half:])
        else:
            writer.write(head + data)
        await writer.drain()
        return True

    async def _send_stream(
        self,
        writer: asyncio.StreamWriter,
        body: dict,
        index: int,
        action: Action,
        content: str,
        keep_alive: bool,
        echo: str | None = None,
    ) -> bool:
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        base: dict[str, Any] = {
            "id": f"chatcmpl-fake{index:06d}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": self._model(action),
        }
        if include_usage:
            base["usage"] = None

        async def event(data: str) -> None:
            raw = f"data: {data}\n\n".encode()
            writer.write(b"%x\r\n%s\r\n" % (len(raw), raw))
            await writer.drain()

        def chunk(delta: dict, finish_reason: str | None = None) -> str:
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
            return _echoed({**base, "choices": [choice]}, echo, action.echo)

        writer.write(
            self._head(
                200, "text/event-stream; charset=utf-8", keep_alive, index=index, chunked=True
            )
        )
        await writer.drain()
        if action.kind == "stall_first":
            await self._sleep(action.stall_s)
        pieces = _split_pieces(content, cuts=_cuts(content, echo, action.echo))
        stall_at = min(2, len(pieces)) if action.kind == "stall_mid" else -1
        for i, piece in enumerate(pieces):
            if i == stall_at:
                await self._sleep(action.stall_s)
            delta = {"role": "assistant", "content": piece} if i == 0 else {"content": piece}
            await event(chunk(delta))
            if action.kind == "stream_error":  # one piece, then the error event
                error = _error_body(500, self._echo_message(action, 500))
                await event(_echoed(error, echo, action.echo))
                break
        if stall_at == len(pieces):
            await self._sleep(action.stall_s)
        await event(chunk({}, "stop"))
        if include_usage:
            usage = {**base, "choices": [], "usage": self._usage(body, content)}
            await event(_echoed(usage, echo, action.echo))
        await event("[DONE]")
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        return True

    def _head(
        self,
        status: int,
        content_type: str,
        keep_alive: bool,
        *,
        length: int | None = None,
        index: int | None = None,
        chunked: bool = False,
        extra_headers: list[tuple[str, str]] | None = None,
    ) -> bytes:
        lines = [f"HTTP/1.1 {status} {_reason(status)}", f"Content-Type: {content_type}"]
        if chunked:
            lines.append("Transfer-Encoding: chunked")
            lines.append("Cache-Control: no-cache")
        else:
            lines.append(f"Content-Length: {length or 0}")
        lines.append(f"Connection: {'keep-alive' if keep_alive else 'close'}")
        if index is not None:
            lines.append(f"x-request-id: req-fake-{index:06d}")
        for name, value in extra_headers or ():
            lines.append(f"{name}: {value}")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    async def _send_json(
        self,
        writer: asyncio.StreamWriter,
        status: int,
        payload: dict,
        keep_alive: bool,
        extra_headers: list[tuple[str, str]] | None = None,
        *,
        echo: str | None = None,
        style: str | None = None,
    ) -> bool:
        data = _echoed(payload, echo, style).encode("utf-8")
        head = self._head(
            status, "application/json", keep_alive, length=len(data), extra_headers=extra_headers
        )
        writer.write(head + data)
        await writer.drain()
        return True

    async def _send_error(
        self,
        writer: asyncio.StreamWriter,
        status: int,
        keep_alive: bool,
        message: str | None = None,
        extra_headers: list[tuple[str, str]] | None = None,
    ) -> bool:
        payload = _error_body(status, message)
        return await self._send_json(writer, status, payload, keep_alive, extra_headers)

    @staticmethod
    async def _sleep(seconds: float) -> None:
        if seconds > 0:
            await asyncio.sleep(seconds)


# --------------------------------------------------------------------------- __main__


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Fake OpenAI chat-completions server.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds per request")
    parser.add_argument("--model", default="fake-model-1", help="model name reported")
    parser.add_argument("--slots", type=int, help="serve N requests at once, queue the rest "
                                                  "(a self-hosted server; --latency is then "
                                                  "each request's fixed part)")
    parser.add_argument("--prompt-s-per-token", type=float, default=0.0,
                        help="with --slots: seconds per prompt token its slot has not cached")
    parser.add_argument("--output-s-per-token", type=float, default=0.0,
                        help="with --slots: seconds per output token")
    parser.add_argument("--jitter", type=float, default=0.0,
                        help="with --slots: a uniform random extra in [0, JITTER) seconds")
    parser.add_argument("--arrival-jitter", type=float, default=0.0,
                        help="with --slots: each request queues after a uniform random "
                             "[0, ARRIVAL_JITTER) seconds (requests sent at once arrive in "
                             "no fixed order)")
    parser.add_argument("--time-scale", type=float, default=1.0,
                        help="with --slots: each modelled second lasts TIME_SCALE seconds")
    parser.add_argument("--schema-mode", default="enforce", choices=sorted(SCHEMA_MODES))
    args = parser.parse_args(argv)
    slots = None
    if args.slots:
        slots = SlotModel(args.slots, args.latency, args.prompt_s_per_token,
                          args.output_s_per_token, args.jitter,
                          arrival_jitter_s=args.arrival_jitter, time_scale=args.time_scale)
    server = FakeLLM(
        latency_s=args.latency, model_reported=args.model, host=args.host, port=args.port,
        slots=slots, schema_mode=args.schema_mode,
    )

    def ready() -> None:
        print(f"READY {server.base_url}", flush=True)

    asyncio.run(server.serve_forever(on_ready=ready, install_signal_handlers=True))
    print(f"REQUESTS {len(server.requests)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())


def always_invalid_for_the_first_question(bad: list[str]):  # noqa: ANN201 - a responder
    """A server responder: the first question asked (its prompt is kept in ``bad``) only ever
    gets schema-invalid answers, the call and its repair alike."""

    def responder(body: dict, index: int) -> Action | None:
        prompt = body["messages"][1]["content"]
        bad[:] = bad or [prompt]
        return Action("schema_invalid") if prompt == bad[0] else None

    return responder
