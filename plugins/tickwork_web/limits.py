"""Limits on what a client sends, so that no input is a 500, a wait or a huge log line:

- :class:`BodyLimit`: a request body over its limit is refused with 413 as soon as its
  ``Content-Length`` announces it (nothing of it is read or waited for), and a body without one
  (chunked) as soon as the limit is read;
- :func:`too_deep`: JSON nested deeper than :data:`MAX_DEPTH`, refused before ``json.loads``
  (whose C parser raises ``RecursionError`` around 1,000 levels, and everything that walks the
  parsed value later recurses too: validation, ``json.dumps`` into the store, the pages);
- :func:`capped`: a value as a log line may show it, one line of at most so many characters.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

#: The deepest JSON accepted: a schedule's arguments are keyword arguments, a few levels deep;
#: 32 leaves room for any real document and stays far below where a recursive walk fails.
MAX_DEPTH = 32
#: Most characters of a schedule name in a log line, and of any other value (a reason, a caller).
MAX_LOGGED_NAME = 200
MAX_LOGGED_TEXT = 1000

#: The characters the depth scan looks at; the others are skipped by the regex engine, in C.
_SPECIAL = re.compile(r'[\[\]{}"\\]')


def too_deep(text: str, limit: int = MAX_DEPTH) -> bool:
    """Whether the JSON document ``text`` nests more than ``limit`` arrays and objects.

    One pass over the brackets, quotes and backslashes (linear in any input: malformed JSON is
    left to ``json.loads`` to refuse); brackets inside strings are text and are not counted.
    """
    depth = 0
    in_string = False
    escaped = -1  # the position of the character the last backslash in a string escapes
    for match in _SPECIAL.finditer(text):
        char, at = match.group(), match.start()
        if in_string:
            if at == escaped:
                continue
            if char == "\\":
                escaped = at + 1
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > limit:
                return True
        elif char in "]}":
            depth -= 1
    return False


def deep_message(limit: int = MAX_DEPTH) -> str:
    return f"JSON nested deeper than {limit} levels"


def capped(text: str, limit: int = MAX_LOGGED_TEXT) -> str:
    """``text`` as one line of at most ``limit`` characters (and the note of its length): a
    value from a request must neither flood the log nor start a forged line in it."""
    length = len(text)  # as sent, before the escapes below lengthen it
    if not text.isprintable():  # the common case is printable, checked in C
        text = "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({length} characters)"


def capped_name(name: str) -> str:
    """A schedule name quoted as ``repr`` quotes it; over :data:`MAX_LOGGED_NAME` characters the
    note of its length is outside the quotes, so it cannot be read as part of the name."""
    if len(name) <= MAX_LOGGED_NAME:
        return repr(name)
    return f"{name[:MAX_LOGGED_NAME]!r}… ({len(name)} characters)"


class BodyTooLarge(Exception):
    """Raised from ``receive`` once more than the limit has arrived (caught by :class:`BodyLimit`)."""


def _declared_length(scope: Scope) -> int | None:
    for key, value in scope["headers"]:
        if key == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None  # the server refuses a malformed one before the app sees it
    return None


class BodyLimit:
    """ASGI middleware refusing a request body over ``limit_of(request)`` bytes with
    ``refuse(request, limit)`` (a 413 response, sent with ``Connection: close``).

    A ``Content-Length`` over the limit is answered before the application runs: nothing of the
    body is read, so a client that announces 10 MB and sends nothing is answered at once, not
    once a timeout ends its wait. A body without one is counted as it arrives and refused when
    the count passes the limit, so at most the limit (and one chunk) is ever read. The connection
    is closed afterwards rather than kept alive: keeping it would mean reading the rest of the
    refused body first.
    """

    def __init__(
        self,
        app: ASGIApp,
        limit_of: Callable[[Request], int],
        refuse: Callable[[Request, int], Response],
    ) -> None:
        self.app = app
        self.limit_of = limit_of
        self.refuse = refuse

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        limit = self.limit_of(request)
        declared = _declared_length(scope)
        if declared is not None and declared > limit:
            await self._refuse(request, limit, receive, send)
            return
        received = 0
        started = False

        async def counted() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise BodyTooLarge
            return message

        async def watched(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted, watched)
        except BodyTooLarge:
            if started:  # a handler that answers while still reading: nothing more can be said
                raise
            await self._refuse(request, limit, receive, send)

    async def _refuse(self, request: Request, limit: int, receive: Receive, send: Send) -> None:
        response = self.refuse(request, limit)
        response.headers["Connection"] = "close"
        await response(request.scope, receive, send)
