"""A host's transcript as the connector reads it: its complete lines from a byte offset, read
by the one line reader (`lines.Blocks`) in bounded chunks, a line too long to hold given as None
rather than held whole.

Zeros before a line are part of it, as in a session log. A transcript line is JSON, which never
holds a zero: zeros where a line starts are turns the host wrote and a crash of the machine lost
(the file's size was kept, not its data), and the host's next line follows them without a line
break between. What they held is unknown (it may have been an untrusted tool result), so the line
they begin is damage that taints, never passed over (docs/decisions.md). A crash of the host's
process leaves no zeros: a last line without its line break, which waits.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator

from memoryd.logs.lines import Block, Blocks, chunks_of

MAX_LINE = 64 << 20
"""The longest transcript line read, in bytes (64 MiB: a line may hold a pasted image); a
longer one is damage, skipped without being held whole."""


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
        found = Blocks(chunks_of(self.fd, offset, size), offset, limit=MAX_LINE, skip_zeros=False)
        return _complete(found)


def _complete(found: Iterable[Block]) -> Iterator[tuple[bytes | None, int]]:
    """Each line of `found` (read with zeros part of a line) with the offset after it, None for
    one over the limit; a chunk (4 MiB) is shorter than MAX_LINE, so no line of a block is."""
    for block in found:
        if block.data is None:
            yield None, block.end
            continue
        data, begin = block.data, 0
        while (cut := data.find(b"\n", begin)) >= 0:
            yield data[begin:cut], block.start + cut + 1
            begin = cut + 1
        del block, data  # not held while the next chunk is read: one chunk at once, as before
