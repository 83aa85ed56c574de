"""Redaction of the credentials the judge's client sends, from every text that reaches disk.

An endpoint may echo a request header into its answer (a debugging proxy, a misconfigured
server), so the text the endpoint sends back -- an answer, a streamed answer once assembled,
the reported model, an error body -- may hold the API key. ``Redactor`` replaces every
occurrence of each secret with ``MARKER``, in the forms an echo takes on its way: as it is,
JSON-escaped (``\\/``, ``\\"``, ``\\uXXXX``, every character unicode-escaped, any depth of
escaping: a JSON answer stored inside a JSON record), Python-escaped (``\\xNN``, as a ``repr``
shows it), percent-encoded and as HTML character references.

Which values count: the API key (``OPENAI_API_KEY``, ``OPENAI_ADMIN_KEY``), the webhook secret,
every header value of ``OPENAI_CUSTOM_HEADERS`` (and its last word: the token after
``Bearer``), and the user, password and Basic credential of userinfo in ``OPENAI_BASE_URL``.
A value shorter than ``MIN_CHARS``, or made of letters only and shorter than
``WORD_MAX_CHARS``, is a placeholder (a local server's ``EMPTY``, LiteLLM's ``anything``), not a
secret: it is left alone, so that the judge's prose keeps the word.
"""

from __future__ import annotations

import base64
import functools
import logging
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar
from urllib.parse import unquote, urlsplit

MARKER = "[redacted]"
MIN_CHARS = 8
WORD_MAX_CHARS = 16
KEY_VARS = ("OPENAI_API_KEY", "OPENAI_ADMIN_KEY", "OPENAI_WEBHOOK_SECRET")
HEADERS_VAR = "OPENAI_CUSTOM_HEADERS"
URL_VAR = "OPENAI_BASE_URL"
_NAMED = {'"': "quot", "&": "amp", "<": "lt", ">": "gt", "'": "apos"}

T = TypeVar("T")


def is_secret(value: str) -> bool:
    """Whether a configured value is worth redacting (not a placeholder; see the module)."""
    if len(value) < MIN_CHARS:
        return False
    return not (value.isalpha() and len(value) < WORD_MAX_CHARS)


def _hex(value: int, width: int = 0) -> str:
    """``value`` in hex digits, either case."""
    return "".join(f"[{d}{d.upper()}]" if d.isalpha() else d for d in f"{value:0{width}x}")


def _char(c: str) -> str:
    """A pattern for one character of a secret in any of the forms an echo may take."""
    cp = ord(c)
    forms = [r"\\*" + re.escape(c)]  # as it is, or backslash-escaped (\/, \", \\), any depth
    if cp <= 0xFFFF:
        forms.append(r"\\+u" + _hex(cp, 4))
    else:  # JSON: a surrogate pair; Python: \U
        high, low = 0xD800 + ((cp - 0x10000) >> 10), 0xDC00 + ((cp - 0x10000) & 0x3FF)
        forms += [rf"\\+u{_hex(high, 4)}\\+u{_hex(low, 4)}", r"\\+U" + _hex(cp, 8)]
    if cp < 0x100:
        forms.append(r"\\+x" + _hex(cp, 2))
    forms.append("".join("%" + _hex(b, 2) for b in c.encode("utf-8")))
    forms += [f"&#0*{cp};", f"&#[xX]0*{_hex(cp)};"]
    if c in _NAMED:
        forms.append(f"&{_NAMED[c]};")
    return "(?:" + "|".join(forms) + ")"


def pattern_for(secret: str) -> str:
    return "".join(_char(c) for c in secret)


class Redactor:
    """Replaces every configured secret with ``MARKER``; does nothing when there is none."""

    def __init__(self, values: Iterable[str | None]) -> None:
        self.secrets = frozenset(v for v in values if v and is_secret(v))
        # longest first: a credential that contains another is replaced whole
        ordered = sorted(self.secrets, key=lambda s: (-len(s), s))
        # a match starts with a secret's first character, a backslash, % or & (its escaped
        # forms): the lookahead lets the engine skip every other position at C speed
        first = "".join(sorted({re.escape(s[0]) for s in ordered}))
        self._pattern = re.compile(
            rf"(?=[\\%&{first}])(?:{'|'.join(map(pattern_for, ordered))})") if ordered else None

    def __bool__(self) -> bool:
        return self._pattern is not None

    def __call__(self, text: str) -> str:
        if self._pattern is None or not text:
            return text
        return self._pattern.sub(MARKER, text)

    def optional(self, text: str | None) -> str | None:
        return None if text is None else self(text)

    def value(self, value: T) -> T:
        """Strings inside dicts, lists and tuples (an error's parsed body) redacted."""
        if self._pattern is None:
            return value
        if isinstance(value, str):
            return self(value)  # type: ignore[return-value]
        if isinstance(value, dict):
            return {self.value(k): self.value(v) for k, v in value.items()}  # type: ignore
        if isinstance(value, list | tuple):
            return type(value)(self.value(v) for v in value)  # type: ignore[return-value]
        return value

    def exception(self, exc: BaseException) -> BaseException:
        """``exc`` with its message, arguments and text attributes (an API error's message,
        body, code, param) redacted in place, so that whatever prints or stores it (a one-line
        error, Dagster's step failure, a traceback) never sees a secret."""
        if self._pattern is None:
            return exc
        exc.args = self.value(exc.args)
        for name, attribute in vars(exc).items():
            if isinstance(attribute, str | dict | list | tuple):
                setattr(exc, name, self.value(attribute))
        return exc


def header_secrets(headers: Mapping[str, Any]) -> list[str]:
    """Each header value, and its last word (the token of ``Bearer <token>``)."""
    out: list[str] = []
    for value in headers.values():
        if isinstance(value, str) and value.strip():
            out += [value.strip(), value.split()[-1]]
    return out


def url_secrets(url: str | None) -> list[str]:
    """The userinfo of a URL: user, password, ``user:password`` and its Basic credential
    (percent-decoded: the percent-encoded form is matched character by character)."""
    if not url:
        return []
    try:
        parts = urlsplit(url)
        user, password = parts.username, parts.password
    except ValueError:
        return []
    if user is None:
        return []
    user, password = unquote(user), unquote(password) if password is not None else None
    joined = f"{user}:{password or ''}"
    return [user, joined, base64.b64encode(joined.encode("utf-8")).decode("ascii"),
            *([password] if password else [])]


def parse_custom_headers(text: str | None) -> dict[str, str]:
    """``OPENAI_CUSTOM_HEADERS`` as the openai client reads it: ``Name: value`` lines."""
    headers: dict[str, str] = {}
    for line in (text or "").split("\n"):
        name, colon, value = line.partition(":")
        if colon:
            headers[name.strip()] = value.strip()
    return headers


def secrets_of(keys: Iterable[str | None], headers: Mapping[str, Any],
               base_url: str | None) -> list[str]:
    """Every value a client configured so sends that may be a credential."""
    return [*(k for k in keys if k), *header_secrets(headers), *url_secrets(base_url)]


def environment_secrets(environ: Mapping[str, str]) -> list[str]:
    """What ``openai.AsyncOpenAI()`` would send, read from the environment it reads."""
    return secrets_of((environ.get(v) for v in KEY_VARS),
                      parse_custom_headers(environ.get(HEADERS_VAR)), environ.get(URL_VAR))


@functools.lru_cache(maxsize=8)
def _redactor_of(values: tuple[str | None, ...]) -> Redactor:
    names = (*KEY_VARS, HEADERS_VAR, URL_VAR)
    return Redactor(environment_secrets({n: v for n, v in zip(names, values, strict=True)
                                         if v is not None}))


def environment_redactor() -> Redactor:
    """The redactor of the secrets the environment holds now (built once per distinct set)."""
    return _redactor_of(tuple(os.environ.get(n) for n in (*KEY_VARS, HEADERS_VAR, URL_VAR)))


# the loggers the openai client and its HTTP layers write to (its debug log shows request
# options, custom headers included, under OPENAI_LOG=debug)
CLIENT_LOGGERS = ("openai", "openai._base_client", "httpx", "httpcore", "aiohttp.client")


class LogRedaction(logging.Filter):
    """Redacts a record's formatted message (added to each of ``CLIENT_LOGGERS``: a logger's
    own filters see every record logged on it)."""

    def __init__(self, redact: Redactor) -> None:
        super().__init__()
        self.redact = redact

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except (TypeError, ValueError):  # a malformed record: left as the logger made it
            return True
        clean = self.redact(message)
        if clean != message:
            record.msg, record.args = clean, None
        return True

    def install(self) -> LogRedaction:
        for name in CLIENT_LOGGERS:
            logging.getLogger(name).addFilter(self)
        return self

    def remove(self) -> None:
        for name in CLIENT_LOGGERS:
            logging.getLogger(name).removeFilter(self)
