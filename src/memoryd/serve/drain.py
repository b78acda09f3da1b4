"""Stdio's end held back until every request read has its answer.

The MCP SDK's server cancels the requests still running when its input ends, so a client that
writes its requests and closes stdin (`memoryd mcp < session.jsonl`, a script, a host closing
the pipe as it leaves) lost every answer not written yet. Here the end of the input is passed
on only once each request read before it was answered (or cancelled by the client), or after
`DRAIN` seconds: a request that never ends cannot hold the process for ever.
"""

from __future__ import annotations

import contextvars
from types import TracebackType
from typing import Any

import anyio
from mcp.shared._stream_protocols import ReadStream, WriteStream
from mcp.shared.message import SessionMessage
from mcp.types import JSONRPCError, JSONRPCNotification, JSONRPCRequest, JSONRPCResponse

DRAIN = 30.0
"""The longest the end of the input waits for the answers still owed (a recall waits for Honcho
5 s at most, an edit for the home's lock 10 s)."""

RequestId = str | int


class Owed:
    """The ids of the requests read and not answered yet."""

    def __init__(self) -> None:
        self.ids: set[RequestId] = set()
        self._settled = anyio.Event()

    def read(self, message: object) -> None:
        """Count a request read; a client's cancellation settles the request it names."""
        if isinstance(message, JSONRPCRequest):
            self.ids.add(message.id)
        elif isinstance(message, JSONRPCNotification) and message.method == (
            "notifications/cancelled"
        ):
            request = (message.params or {}).get("requestId")
            if isinstance(request, (str, int)):
                self._settle(request)

    def written(self, message: object) -> None:
        """Settle the request an answer (a result or an error) is for."""
        if isinstance(message, (JSONRPCResponse, JSONRPCError)) and message.id is not None:
            self._settle(message.id)

    def _settle(self, request: RequestId) -> None:
        self.ids.discard(request)
        if not self.ids:
            self._settled.set()
            self._settled = anyio.Event()

    async def settled(self) -> None:
        """Return once no answer is owed, or after DRAIN seconds."""
        with anyio.move_on_after(DRAIN):
            while self.ids:
                await self._settled.wait()


class HeldRead:
    """The server's input: the client's messages, its end passed on once nothing is owed."""

    def __init__(self, inner: ReadStream[SessionMessage | Exception], owed: Owed) -> None:
        self._inner, self._owed = inner, owed

    @property
    def last_context(self) -> contextvars.Context | None:
        """The sender's context of the last message, as the SDK's own stream gives it."""
        context: contextvars.Context | None = getattr(self._inner, "last_context", None)
        return context

    async def receive(self) -> SessionMessage | Exception:
        """The next message; at the end of the input, first every answer owed."""
        try:
            item = await self._inner.receive()
        except anyio.EndOfStream:
            await self._owed.settled()
            raise
        if isinstance(item, SessionMessage):
            self._owed.read(item.message)
        return item

    async def aclose(self) -> None:
        """Close the client's input."""
        await self._inner.aclose()

    def __aiter__(self) -> HeldRead:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> HeldRead:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> bool | None:
        await self.aclose()
        return None


class CountedWrite:
    """The server's output: each answer written settles its request."""

    def __init__(self, inner: WriteStream[SessionMessage], owed: Owed) -> None:
        self._inner, self._owed = inner, owed

    async def send(self, item: SessionMessage, /) -> None:
        """Write a message to the client."""
        await self._inner.send(item)
        self._owed.written(item.message)

    async def aclose(self) -> None:
        """Close the output."""
        await self._inner.aclose()

    async def __aenter__(self) -> CountedWrite:
        return self

    async def __aexit__(self, *exc: Any) -> bool | None:
        await self.aclose()
        return None


def held(
    read: ReadStream[SessionMessage | Exception], write: WriteStream[SessionMessage]
) -> tuple[HeldRead, CountedWrite]:
    """The stdio streams with the input's end held back until every request is answered."""
    owed = Owed()
    return HeldRead(read, owed), CountedWrite(write, owed)
