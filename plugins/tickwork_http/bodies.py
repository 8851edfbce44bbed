"""Reading at most a bounded amount of a response body, decoded or not, whatever the server sends.

httpx decodes a compressed body one network chunk at a time before any cap of ours applies, so a
small gzip "bomb" can expand to hundreds of MiB in memory. The executor therefore reads the raw
stream and decodes it here, with zlib told never to produce more than the room left.
"""

from __future__ import annotations

import zlib
from collections.abc import AsyncIterator

#: Shown instead of a body in an encoding we cannot decode with a bound (br, zstd, several, ...).
UNDECODED = "[body in Content-Encoding {} not shown]"


class _Decoder:
    """Identity: keeps the first ``cap`` bytes of what it is fed."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.parts: list[bytes] = []
        self.size = 0
        #: Whether output beyond ``cap`` was dropped (or may have been).
        self.overflowed = False

    @property
    def full(self) -> bool:
        return self.size >= self.cap

    def _keep(self, data: bytes) -> None:
        room = self.cap - self.size
        if len(data) > room:
            data = data[:room]
            self.overflowed = True
        self.parts.append(data)
        self.size += len(data)

    def feed(self, chunk: bytes) -> None:
        self._keep(chunk)

    def data(self) -> bytes:
        return b"".join(self.parts)


class _ZlibDecoder(_Decoder):
    """gzip or deflate: never inflates more than the room left, whatever the ratio."""

    def __init__(self, cap: int, wbits: int) -> None:
        super().__init__(cap)
        self._wbits = wbits
        self._inflate = zlib.decompressobj(wbits)
        self._started = False
        self.broken = False

    def feed(self, chunk: bytes) -> None:
        if self.broken or self.full:
            self.overflowed = self.overflowed or bool(chunk)
            return
        try:
            out = self._inflate.decompress(chunk, self.cap - self.size)
        except zlib.error:
            if self._started or self._wbits != zlib.MAX_WBITS:
                self.broken = True
                return
            # Some servers send raw deflate under "deflate"; retry the first chunk that way.
            self._wbits = -zlib.MAX_WBITS
            self._inflate = zlib.decompressobj(self._wbits)
            self.feed(chunk)
            return
        self._started = True
        self._keep(out)
        # Input left over once the room is used up would inflate to more than we keep.
        if self._inflate.unconsumed_tail:
            self.overflowed = True


def decoder_for(content_encoding: str | None, cap: int) -> _Decoder | None:
    """A decoder keeping at most ``cap`` decoded bytes, or ``None`` for an encoding we do not decode."""
    encoding = (content_encoding or "identity").strip().lower()
    if encoding in ("", "identity"):
        return _Decoder(cap)
    if encoding in ("gzip", "x-gzip"):
        return _ZlibDecoder(cap, zlib.MAX_WBITS | 16)
    if encoding == "deflate":
        return _ZlibDecoder(cap, zlib.MAX_WBITS)
    return None


async def read_capped(
    raw: AsyncIterator[bytes], content_encoding: str | None, content_length: str | None, cap: int
) -> tuple[bytes, bool]:
    """Read at most ``cap`` raw bytes of ``raw`` and decode at most ``cap`` bytes of them.

    :return: the decoded bytes and whether the body went on beyond them (or may have)
    """
    if cap <= 0:
        return b"", not (content_length is not None and content_length.strip() == "0")
    decoder = decoder_for(content_encoding, cap)
    if decoder is None:
        return UNDECODED.format((content_encoding or "").strip()[:40]).encode(), False
    size = 0
    async for chunk in raw:
        size += len(chunk)
        decoder.feed(chunk)
        if decoder.full or size >= cap:
            break
    else:
        return decoder.data(), decoder.overflowed
    # Stopped early: the connection is dropped with the rest unread.
    identity = type(decoder) is _Decoder
    complete = (
        identity and not decoder.overflowed and content_length is not None and content_length.strip() == str(size)
    )
    return decoder.data(), not complete
