"""`memoryd mcp`'s stdio as JSON-RPC 2.0 holds a server to it, around the MCP SDK's server.

- The end of the input waits for every answer owed. The SDK cancels the requests still running
  when its input ends, so a client that writes its requests and closes stdin (`memoryd mcp <
  session.jsonl`, a script, a host closing the pipe as it leaves) lost every answer not written
  yet. Here the end is passed on once each request read before it was answered (or cancelled by
  the client), or after `DRAIN` seconds: a request that never ends cannot hold it for ever.
- A line that is no message is answered. The SDK's stdio transport hands its server the error of
  a line that is not JSON or a batch, and reads a request whose id is neither a string nor an
  integer (`true`, `null`, `1.5`) as a notification, dropping the id; its server answers none
  of them, so the client waits for ever. Here each gets JSON-RPC's error with a null id (-32700
  for a line that is not JSON, else -32600), in words of our own: nothing of the line is
  echoed. A notification is one by its method (MCP names every notification
  `notifications/...`): a request's method without a usable id is refused. A blank line is
  passed over.
"""

from __future__ import annotations

import contextvars
from types import TracebackType
from typing import Any

import anyio
from mcp.shared._stream_protocols import ReadStream, WriteStream
from mcp.shared.message import SessionMessage
from mcp.types import (
    ErrorData,
    JSONRPCError,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
)
from pydantic import ValidationError

from memoryd.serve.jsonrpc import INVALID_REQUEST, NO_MESSAGE, NOT_JSON, PARSE_ERROR

DRAIN = 30.0
"""The longest the end of the input waits for the answers still owed (a recall waits for Honcho
5 s at most, an edit for the home's lock 10 s)."""

RequestId = str | int


def refusal(problem: Exception) -> JSONRPCError | None:
    """The error answering a line the SDK could not read as a message (None for a blank line)."""
    if not isinstance(problem, ValidationError):
        return None
    first = problem.errors()[0]
    if first["type"] == "json_invalid":
        if isinstance(first.get("input"), str) and not first["input"].strip():
            return None
        return _error(PARSE_ERROR, NOT_JSON)
    return _error(INVALID_REQUEST, NO_MESSAGE)


def _unanswerable(message: object) -> bool:
    # A request whose id the SDK could not take (it reads one as a notification): no answer
    # could name it, so it is refused as no message.
    return isinstance(message, JSONRPCNotification) and not message.method.startswith(
        "notifications/"
    )


def _error(code: int, message: str) -> JSONRPCError:
    return JSONRPCError(jsonrpc="2.0", id=None, error=ErrorData(code=code, message=message))


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
    """The server's input: the client's messages, a line that is none answered at once, the
    end passed on once nothing is owed."""

    def __init__(
        self, inner: ReadStream[SessionMessage | Exception], owed: Owed, out: CountedWrite
    ) -> None:
        self._inner, self._owed, self._out = inner, owed, out

    @property
    def last_context(self) -> contextvars.Context | None:
        """The sender's context of the last message, as the SDK's own stream gives it."""
        context: contextvars.Context | None = getattr(self._inner, "last_context", None)
        return context

    async def receive(self) -> SessionMessage | Exception:
        """The next message; at the end of the input, first every answer owed."""
        while True:
            try:
                item = await self._inner.receive()
            except anyio.EndOfStream:
                await self._owed.settled()
                raise
            if isinstance(item, SessionMessage):
                if not _unanswerable(item.message):
                    self._owed.read(item.message)
                    return item
                answer: JSONRPCError | None = _error(INVALID_REQUEST, NO_MESSAGE)
            else:
                answer = refusal(item)
            if answer is None and not isinstance(item, ValidationError):
                return item  # not a line's error: the SDK's to handle
            if answer is not None:
                await self._out.send(SessionMessage(answer))

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
    """The stdio streams: a line that is no message answered, the input's end held back until
    every request is answered."""
    owed = Owed()
    out = CountedWrite(write, owed)
    return HeldRead(read, owed, out), out
