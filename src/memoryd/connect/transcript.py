"""A host's transcript as the connector reads it: its complete lines from a byte offset, in
bounded chunks, a line too long to hold given as None rather than held whole."""

from __future__ import annotations

import os
from collections.abc import Iterator

from memoryd.lines import extent

MAX_LINE = 64 << 20
"""The longest transcript line read, in bytes (64 MiB: a line may hold a pasted image); a
longer one is damage, skipped without being held whole."""

_CHUNK = 4 << 20


class Transcript:
    """An open transcript and its lines from an offset."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.stat = os.fstat(fd)

    def close(self) -> None:
        """Close the file."""
        os.close(self.fd)

    def lines(self, offset: int, size: int) -> Iterator[tuple[bytes | None, int]]:
        """Each complete line after `offset` up to `size`, with the offset after it (None for a
        line longer than MAX_LINE); a last line without its line break is left for later."""
        at, carry, long = offset, bytearray(), False
        while at < size:
            start, end = extent(self.fd, at, size)
            if start > at:  # a hole of a sparse file: zeros, in the line being read
                if long or len(carry) + start - at > MAX_LINE:
                    carry, long = bytearray(), True
                else:
                    carry += bytes(start - at)
                at = start
            chunk = os.pread(self.fd, min(_CHUNK, end - at), at)
            if not chunk:
                return
            begin = 0
            while True:
                cut = chunk.find(b"\n", begin)
                if cut < 0:
                    break
                end = at + cut + 1
                # The end of a line that passed the limit in this chunk is over it too.
                if long or len(carry) + cut - begin > MAX_LINE:
                    yield None, end
                else:
                    carry += chunk[begin:cut]
                    yield bytes(carry), end
                carry, long, begin = bytearray(), False, cut + 1
            if not long:
                carry += chunk[begin:]
                if len(carry) > MAX_LINE:
                    carry, long = bytearray(), True
            at += len(chunk)
