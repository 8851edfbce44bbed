"""Error text as the history keeps it: capped, saying how much was cut."""

from __future__ import annotations

#: Longest error text kept in the history.
MAX_ERROR_CHARS = 4000


def cap(text: str | None, limit: int = MAX_ERROR_CHARS) -> str | None:
    if text is None or len(text) <= limit:
        return text
    return text[: limit - 20] + f"... [{len(text) - limit + 20} chars cut]"
